from rig import uartlog
from rig.wire import foreign_byte, find_line, marker, wire_lines


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
