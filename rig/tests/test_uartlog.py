import pytest

from rig import uartlog
from rig.uartlog import UartLogError, pack_header, pack_record


def sample(n=3):
    recs = [pack_record(0, 100, 0, "IER", 0x00), pack_record(1, 200, 1, "THR", ord("h")),
            pack_record(2, 300, None, "MARKER", 0xDEADBEEF)]
    return pack_header() + b"".join(recs[:n])


def test_roundtrip_fields():
    log = uartlog.parse(sample())
    assert log.header.baudbase == 115200 and log.header.iobase == 0x3F8
    assert [r.reg for r in log.records] == ["IER", "THR", "MARKER"]
    assert log.records[1].cpu == 1 and log.records[2].cpu is None
    assert log.records[2].value == 0xDEADBEEF and log.records[1].vtime_ns == 200
    assert log.thr_bytes() == b"h" and log.per_cpu_streams() == {1: b"h"}


def test_header_only_log_is_empty_not_an_error():
    assert uartlog.parse(pack_header()).records == []


def test_truncated_record_names_its_offset():
    data = sample()[:-5]
    with pytest.raises(UartLogError, match=r"19 stray bytes of a partial record at offset 112"):
        uartlog.parse(data)


def test_empty_file_and_short_header():
    with pytest.raises(UartLogError, match="0 bytes, shorter than its 64-byte header"):
        uartlog.parse(b"")
    with pytest.raises(UartLogError, match="shorter than"):
        uartlog.parse(pack_header()[:40])


def test_wrong_magic_and_version():
    with pytest.raises(UartLogError, match="bad magic .* at offset 0"):
        uartlog.parse(pack_header(magic=b"NOTAUART"))
    with pytest.raises(UartLogError, match="version 7 at offset 8"):
        uartlog.parse(pack_header(version=7))


def test_sequence_gap_is_corruption():
    data = pack_header() + pack_record(0, 1, 0, "THR", 65) + pack_record(2, 2, 0, "THR", 66)
    with pytest.raises(UartLogError, match="offset 88 has seq 2, expected 1"):
        uartlog.parse(data)


def test_read_prefixes_the_path(tmp_path):
    p = tmp_path / "uart.log"
    p.write_bytes(b"junk")
    with pytest.raises(UartLogError, match=r"uart.log: log is 4 bytes"):
        uartlog.read(p)


def test_between_markers_of_one_vcpu_when_two_mark_the_same_value():
    recs = [pack_record(0, 100, 0, "MARKER", 1), pack_record(1, 110, 0, "THR", ord("a")),
            pack_record(2, 120, 1, "MARKER", 1), pack_record(3, 130, 0, "MARKER", 2),
            pack_record(4, 140, 1, "THR", ord("b")), pack_record(5, 150, 1, "MARKER", 2)]
    log = uartlog.parse(pack_header() + b"".join(recs))
    assert [r.seq for r in uartlog.between_markers(log, 1, 2)] == [1, 2]
    assert [r.seq for r in uartlog.between_markers(log, 1, 2, cpu=1)] == [3, 4]
    with pytest.raises(UartLogError, match="from vCPU 2"):
        uartlog.between_markers(log, 1, 2, cpu=2)
