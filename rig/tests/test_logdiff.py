"""rig diff on real logs: a patched boot whose console was taken over twice
(rig/tests/data), edited one way per kind of difference the differ reports,
plus CRLF line ends, syslog prefixes, dmesg --decode, caller fields and
malformed input."""
import io
import json
from pathlib import Path

import pytest

from rig import logdiff

DATA = Path(__file__).parent / "data"
BOOT = (DATA / "patched-boot-takeover.console").read_bytes()


def lines_of(data: bytes):
    return data.decode().split("\n")


def edited(fn) -> bytes:
    lines = lines_of(BOOT)
    fn(lines)
    return "\n".join(lines).encode()


def kinds(a: bytes, b: bytes, **kw):
    res = logdiff.compare(logdiff.parse("A", a), logdiff.parse("B", b), **kw)
    return sorted(d.kind for d in res), res


def index_of(lines, needle):
    return next(i for i, ln in enumerate(lines) if needle in ln)


def test_a_log_equals_itself_and_ignores_timestamps_by_default():
    shifted = BOOT.replace(b"[    1.", b"[    2.")
    assert kinds(BOOT, BOOT)[0] == []
    assert kinds(BOOT, shifted)[0] == []


def test_missing_and_extra_records():
    def drop(lines):
        del lines[index_of(lines, "rig-init: start")]
    assert kinds(BOOT, edited(drop))[0] == ["missing"]
    got, res = kinds(edited(drop), BOOT)
    assert got == ["extra"] and "rig-init: start" in res[0].detail


def test_a_changed_message_is_named_with_both_texts():
    got, res = kinds(BOOT, BOOT.replace(b"rig-init: start", b"rig-init: begin"))
    assert got == ["changed"]
    assert "'rig-init: start' -> 'rig-init: begin'" in res[0].detail


def test_a_moved_record_and_a_per_cpu_order_change():
    def move(lines):
        i = index_of(lines, "Run /init as init process")
        lines.insert(i - 3, lines.pop(i))
    got, res = kinds(BOOT, edited(move))
    assert "moved" in got and "cpu-order" in got
    assert any("Run /init" in d.detail for d in res if d.kind == "moved")


def test_records_from_two_cpus_may_interleave_differently():
    a = b"[    1.000000] 000: a0\n[    1.000001] 001: b0\n[    1.000002] 000: a1\n"
    b = b"[    1.000000] 001: b0\n[    1.000001] 000: a0\n[    1.000002] 000: a1\n"
    got, _ = kinds(a, b)
    assert "cpu-order" not in got and got == ["moved"]


def test_cpu_and_level_changes_of_a_matched_record():
    got, res = kinds(BOOT, BOOT.replace(b"000: rig-init: start", b"001: rig-init: start"))
    assert got == ["cpu"] and "CPU 0 -> 1" in res[0].detail
    a = b"<6>[    1.000000] hello\n<6>[    1.000001] world\n"
    got, res = kinds(a, a.replace(b"<6>[    1.000001]", b"<3>[    1.000001]"))
    assert got == ["level"] and "level 6 -> 3" in res[0].detail


def test_timestamps_compared_only_with_a_tolerance():
    late = BOOT.replace(b"[    1.946648] 000: rig-init: start", b"[    1.996648] 000: rig-init: start")
    assert kinds(BOOT, late)[0] == []
    assert kinds(BOOT, late, ts_tolerance_s=0.1)[0] == []
    got, res = kinds(BOOT, late, ts_tolerance_s=0.01)
    assert got == ["timestamp"] and "+50.000 ms" in res[0].detail


def test_changed_dropped_count():
    a = b"[    1.000000] x\n** 3 printk messages dropped **\n[    1.000002] y\n"
    got, res = kinds(a, a.replace(b"** 3 ", b"** 5 "))
    assert got == ["dropped"] and "3 at line 2" in res[0].detail and "5 at line 2" in res[0].detail


def test_split_and_interleaved_lines():
    # BOOT has two lines cut short by a takeover and printed again after it.
    log = logdiff.parse("boot", BOOT)
    assert len(log.split) == 2
    whole = b"".join(ln + b"\n" for ln in BOOT.split(b"\n")
                     if b"replaying" not in ln)
    got, res = kinds(whole, BOOT)
    assert got.count("split") == 2 and all(d.b_line for d in res if d.kind == "split")
    garbled = BOOT.replace(b"[    1.946648] 000: rig-init: start",
                           b"[    1.946648] 000: rig-init: st[    1.946650] 001: art")
    got, _ = kinds(BOOT, garbled)
    assert "interleaved" in got


def test_masks_addresses_pids_and_hashes():
    a = (b"[    1.000000] CPU: 1 PID: 123 Comm: sh\n"
         b"[    1.000001] RIP: 0010:fn+0x1d/0x30 RAX: ffff888003c1e000\n"
         b"[    1.000002] Kernel Offset: 0x1e000000 from 0xffffffff81000000\n"
         b"[    1.000003] build-id 3f2a9c0d1e4b5a6978c8d7e6f5a4b3c2d1e0f9a8\n")
    b = (b"[    1.000000] CPU: 1 PID: 456 Comm: sh\n"
         b"[    1.000001] RIP: 0010:fn+0x1d/0x30 RAX: ffff888003d20000\n"
         b"[    1.000002] Kernel Offset: 0x2a000000 from 0xffffffff81000000\n"
         b"[    1.000003] build-id 0000000000000000000000000000000000000000\n")
    assert kinds(a, b)[0] == []
    unmasked = logdiff.compare(logdiff.parse("A", a, masked=False),
                               logdiff.parse("B", b, masked=False))
    assert {d.a_line for d in unmasked if d.a_line} == {1, 2, 3, 4}


def test_crlf_syslog_prefixes_decode_and_caller_fields_parse():
    crlf = BOOT.replace(b"\n", b"\r\n")
    assert kinds(BOOT, crlf)[0] == []
    caller = b"[    0.000000][    T0] Linux version 6.12\n[    0.100000][    C1] NMI here\n"
    log = logdiff.parse("caller", caller)
    assert [r.text for r in log.records] == ["Linux version 6.12", "NMI here"]
    assert log.records[1].cpu == 1 and log.records[0].cpu is None
    decoded = b"kern  :info  : [    0.000000] Linux version 6.12\nkern  :err   : [    0.1] x\n" \
              b"kern  :err   : [    0.100000] oops\n"
    log = logdiff.parse("decode", decoded)
    assert [(r.level, r.text) for r in log.records if r.ts_usec is not None] == \
        [(6, "Linux version 6.12"), (3, "oops")]
    raw = b"<4>[    0.100000] warn\n"
    assert logdiff.parse("raw", raw).records[0].level == 4


def test_bad_input_is_named(tmp_path):
    with pytest.raises(logdiff.DiffInputError, match="no kernel log line"):
        logdiff.parse("empty", b"")
    with pytest.raises(logdiff.DiffInputError, match="no kernel log line"):
        logdiff.parse("text", b"hello\nworld\n")
    binary = tmp_path / "bin"
    binary.write_bytes(b"[    1.000000] x\n\0\0")
    with pytest.raises(logdiff.DiffInputError, match="NUL byte at offset 17"):
        logdiff.read(binary)
    with pytest.raises(logdiff.DiffInputError, match="run directory with console.log"):
        logdiff.read(tmp_path / "nope")


def test_main_exit_codes_text_and_json(tmp_path, capsys):
    a, b = tmp_path / "a.log", tmp_path / "b"
    a.write_bytes(BOOT)
    b.mkdir()
    (b / "console.log").write_bytes(BOOT.replace(b"rig-init: start", b"rig-init: begin"))
    out = io.StringIO()
    assert logdiff.main(str(a), str(a), False, None, True, False, out) == 0
    assert out.getvalue().endswith("equal\n")
    out = io.StringIO()
    assert logdiff.main(str(a), str(b), False, None, True, True, out) == 1
    assert "\033[" in out.getvalue() and "-000: rig-init: start" in out.getvalue()
    out = io.StringIO()
    assert logdiff.main(str(a), str(b), True, None, True, False, out) == 1
    doc = json.loads(out.getvalue())
    assert doc["equal"] is False and doc["counts"] == {"changed": 1}
    assert doc["differences"][0]["a_line"] == doc["differences"][0]["b_line"]
    assert logdiff.main(str(a), str(tmp_path / "x"), True, None, True, False, io.StringIO()) == 2
    assert "no such file" in capsys.readouterr().err
