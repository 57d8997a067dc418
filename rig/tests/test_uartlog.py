import pytest

from rig.evidence import uartlog
from rig.evidence.uartlog import MarkerError, UartLogError, pack_header, pack_record


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
    with pytest.raises(MarkerError, match="from vCPU 2"):
        uartlog.between_markers(log, 1, 2, cpu=2)


def test_a_call_whose_caller_moved_ends_at_its_marker_on_the_other_vcpu():
    # S3 on the debug profile: the task began its call on vCPU 0 and wrote
    # its after-marker on vCPU 1.
    recs = [pack_record(0, 100, 0, "MARKER", 1), pack_record(1, 110, 1, "THR", ord("a")),
            pack_record(2, 120, 1, "MARKER", 2), pack_record(3, 130, 1, "THR", ord("b"))]
    log = uartlog.parse(pack_header() + b"".join(recs))
    records, end_cpu = uartlog.call_span(log, 1, 2, cpu=0)
    assert [r.seq for r in records] == [1] and end_cpu == 1
    # Another vCPU's own call with the same markers does not close it.
    recs = [pack_record(0, 100, 0, "MARKER", 1), pack_record(1, 110, 1, "MARKER", 1),
            pack_record(2, 120, 1, "MARKER", 2), pack_record(3, 130, 0, "THR", ord("a"))]
    log = uartlog.parse(pack_header() + b"".join(recs))
    with pytest.raises(MarkerError, match="has no marker 0x2 after it"):
        uartlog.call_span(log, 1, 2, cpu=0)


@pytest.mark.parametrize("offset, byte, why", [
    (16, 0xFF, r"record 0 at offset 64 cannot be: vCPU 255 on a machine of 2"),
    (17, 0xFF, r"record 0 at offset 64 cannot be: vCPU 65280 on a machine of 2"),
    (18, 0x2A, r"record 0 at offset 64 cannot be: unknown register code 43"),
    (19, 0x80, r"record 0 at offset 64 cannot be: unknown flags 0x80"),
    (19, 0x01, r"record 0 at offset 64 cannot be: a read of IER, which the device logs "
               r"only as a write"),
    (21, 0x01, r"record 0 at offset 64 cannot be: value 0x100 in the 8-bit register IER"),
    (15, 0x80, r"record 1 at offset 88 cannot be: virtual time 200 ns before the previous"),
])
def test_a_flipped_byte_is_named_at_its_first_impossible_record(offset, byte, why):
    """Flipped CPU, register, flag, value and time bytes of a record."""
    data = bytearray(sample())
    data[64 + offset] ^= byte
    with pytest.raises(UartLogError, match=why):
        uartlog.parse(bytes(data))


def test_version_1_logs_are_still_read_and_checked_against_a_given_vcpu_count():
    v1 = pack_header(version=1) + sample()[64:]
    assert [r.reg for r in uartlog.parse(v1).records] == ["IER", "THR", "MARKER"]
    with pytest.raises(UartLogError, match="vCPU 1 on a machine of 1"):
        uartlog.parse(v1, cpus=1)


def test_shortfall_of_a_closed_version_2_log():
    whole = pack_header(state=uartlog.STATE_CLOSED, records=3) + sample()[64:]
    assert uartlog.shortfall(uartlog.parse(whole)) is None
    cut = pack_header(state=uartlog.STATE_CLOSED, records=9, lost=6, error=28) + sample()[64:]
    assert uartlog.shortfall(uartlog.parse(cut)) == (
        "holds 3 of the 9 records QEMU logged: QEMU could not write 6 "
        "(ENOSPC: No space left on device)")
    shrunk = pack_header(state=uartlog.STATE_CLOSED, records=4) + sample()[64:]
    assert "the file lost records after QEMU wrote them" in uartlog.shortfall(
        uartlog.parse(shrunk))
    # Open: QEMU did not end by itself (killed) or still runs: no count to hold it to.
    assert uartlog.shortfall(uartlog.parse(pack_header(records=9) + sample()[64:])) is None
    with pytest.raises(UartLogError, match="state 7, 0 of 0 records lost at offset 44"):
        uartlog.parse(pack_header(state=7))


def test_a_reread_log_is_parsed_once_until_the_file_changes(tmp_path):
    """A boot's completeness check and its evidence read the same log: the
    second read is the first's parse; a file that changed is parsed again."""
    p = tmp_path / "uart.log"
    p.write_bytes(sample(2))
    first = uartlog.read(p)
    assert uartlog.read(p) is first
    assert uartlog.read(p, cpus=2) is first       # a version 2 header says its vCPUs
    p.write_bytes(sample(3))
    again = uartlog.read(p)
    assert again is not first and [r.reg for r in again.records] == ["IER", "THR", "MARKER"]


@pytest.mark.parametrize("record, why", [
    (pack_record(3, 250, 0, "THR", 65), "virtual time 250 ns before the previous record's"),
    (pack_record(3, 400, 5, "THR", 65), "vCPU 5 on a machine of"),
    (pack_record(3, 400, 0, "THR", 0x1FF), "value 0x1ff in the 8-bit register THR")])
def test_the_fast_check_sends_any_bad_record_to_the_one_that_names_it(record, why):
    with pytest.raises(UartLogError, match=f"record 3 at offset 136 cannot be: {why}"):
        uartlog.parse(pack_header(cpus=2) + sample()[64:] + record)
