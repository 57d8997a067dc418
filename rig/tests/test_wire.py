import pytest

from rig.evidence import uartlog
from rig.evidence.wire import (LineFormat, find_line, foreign_byte, line_latency, marker,
                               programmed_format, wire_end_ns, wire_lines)


def log_of(writes):
    """writes: (cpu, reg, value) tuples; vtime 1000 ns apart."""
    data = uartlog.pack_header() + b"".join(
        uartlog.pack_record(i, i * 1000, cpu, reg, val) for i, (cpu, reg, val) in enumerate(writes))
    return uartlog.parse(data)


def thr(cpu, text):
    return [(cpu, "THR", b) for b in text.encode()]


def test_lines_carry_their_writers_and_times():
    log = log_of(thr(0, "ab\r\n") + [(1, "MARKER", 7)] + thr(1, "cd\r\n") + thr(0, "e"))
    lines = wire_lines(log)
    assert [ln.text for ln in lines] == ["ab", "cd", "e"]
    assert lines[1].cpus == {1} and lines[1].first.vtime_ns == 5000
    assert marker(log, 7).seq == 4 and marker(log, 7, after_seq=4) is None


def test_interrupted_line_and_foreign_bytes():
    # CPU 0 is cut off after "par"; CPU 1 ends the line and writes its own.
    log = log_of(thr(0, "par") + thr(1, "\r\nEMERG\r\n") + thr(0, "partial\r\n"))
    lines = wire_lines(log)
    assert [ln.text for ln in lines] == ["par", "EMERG", "partial"]
    assert lines[0].body_cpus == {0} and lines[0].cpus == {0, 1}
    assert foreign_byte(find_line(lines, "EMERG"), 1) is None
    mixed = wire_lines(log_of(thr(1, "EM") + thr(0, "x") + thr(1, "ERG\r\n")))[0]
    assert foreign_byte(mixed, 1).seq == 2


def test_start_seq_skips_earlier_bytes():
    log = log_of(thr(0, "old\r\n") + thr(0, "new\r\n"))
    assert [ln.text for ln in wire_lines(log, start_seq=5)] == ["new"]


def timed_log(records):
    """records: (vtime_ns, cpu, reg, value)."""
    data = uartlog.pack_header(baudbase=115200) + b"".join(
        uartlog.pack_record(i, t, cpu, reg, val) for i, (t, cpu, reg, val) in enumerate(records))
    return uartlog.parse(data)


# The 8250 driver's set_termios for 115200 8N1: DLAB on, divisor 1, LCR 0x03.
SETUP_115200_8N1 = [(0, 0, "LCR", 0x83), (0, 0, "DLL", 1), (0, 0, "DLM", 0), (0, 0, "LCR", 0x03)]


def test_programmed_format_from_divisor_and_lcr():
    fmt = programmed_format(timed_log(SETUP_115200_8N1))
    assert (fmt.baud, fmt.bits_per_char) == (115200, 10)
    assert round(fmt.char_ns) == 86806
    # 9600 baud (divisor 12), 7 data bits, even parity, 2 stop bits: 1+7+1+2 bits.
    fmt = programmed_format(timed_log([(0, 0, "DLL", 12), (0, 0, "LCR", 0x02 | 0x08 | 0x04)]))
    assert (fmt.baud, fmt.bits_per_char) == (9600, 11)
    with pytest.raises(ValueError, match="baud rate unknown"):
        programmed_format(timed_log([(0, 0, "THR", 65)]))


def test_wire_end_times_queue_behind_the_byte_in_flight():
    fmt = LineFormat(115200, 10)
    c = fmt.char_ns
    # Two bytes written at once queue; a third written long after starts at once.
    log = timed_log(SETUP_115200_8N1 + [(1000, 0, "THR", 65), (1000, 0, "THR", 66),
                                        (10_000_000, 0, "THR", 67)])
    ends = wire_end_ns(log, fmt)
    assert ends == {4: 1000 + c, 5: 1000 + 2 * c, 6: 10_000_000 + c}


def test_line_latency_against_the_wire_time_of_the_line():
    c = LineFormat(115200, 10).char_ns
    # A 4-byte line written at wire speed from t=1 ms, called at t=0.9 ms.
    recs = SETUP_115200_8N1 + [(1_000_000 + int(i * c), 1, "THR", b)
                               for i, b in enumerate(b"ab\r\n")]
    log = timed_log(recs)
    lat = line_latency(log, wire_lines(log)[0], since_ns=900_000)
    assert lat.line_bytes == 4
    assert lat.ns == pytest.approx(100_000 + 4 * c, abs=2)
    assert lat.ratio == pytest.approx((100_000 + 4 * c) / (4 * c))
