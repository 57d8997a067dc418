"""rig diff on real logs: a patched boot whose console was taken over twice
(rig/tests/data), edited one way per kind of difference the differ reports,
plus CRLF line ends, syslog prefixes, dmesg --decode, caller fields and
malformed input; then real boots, panics, oopses and floods of both flavors
(see "real captures" below) against each other."""
import gzip
import io
import json
import lzma
import os
import threading
from pathlib import Path

import pytest

from rig.evidence import diffstream, logdiff

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


def test_a_long_block_of_changed_records_pairs_each_with_its_change():
    # 2000 changed records between two equal stretches: each is reported as
    # changed, with no all-pairs search (rig diff used to take minutes here).
    def log(suffix):
        lines = [f"init{i}: ready" for i in range(500)]
        lines[250:250] = [f"usb {i % 7}-{i % 5}: descriptor read/{i % 64}, error -{i % 199}{suffix}"
                          for i in range(2000)]
        return "".join(f"[{i / 1e4:12.6f}] {t}\n" for i, t in enumerate(lines)).encode()
    got, res = kinds(log(""), log(" port"))
    assert got == ["changed"] * 2000
    # Each with its own change, not with a look-alike nearby.
    assert all(d.detail == f"{d.detail.split(' -> ')[0]} -> {d.detail.split(' -> ')[0][:-1]} port'"
               for d in res)


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
    cut = {n for n, _ in log.split}
    whole = b"".join(ln + b"\n" for n, ln in enumerate(BOOT.split(b"\n"), 1)
                     if b"replaying" not in ln and n not in cut)
    got, res = kinds(whole, BOOT)
    assert got == ["split", "split"] and all(d.b_line for d in res if d.kind == "split")
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


def test_any_log_in_and_bad_input_named(tmp_path):
    # An empty log, text without timestamps, control bytes: all logs.
    assert logdiff.parse("empty", b"").records == []
    assert [r.text for r in logdiff.parse("text", b"hello\nworld\n").records] == ["hello", "world"]
    assert [r.text for r in logdiff.parse("nul", b"[    1.000000] x\0y\x1b[0m\n").records] == \
        ["x\\x00y\\x1b[0m"]
    # Missing files, truncated compressed data.
    with pytest.raises(logdiff.DiffInputError, match="run directory with console.log"):
        logdiff.read(tmp_path / "nope")
    cut = tmp_path / "cut.xz"
    cut.write_bytes(lzma.compress(BOOT)[:200])
    with pytest.raises(logdiff.DiffInputError, match=r"cut.xz: truncated or corrupt xz data"):
        logdiff.read(cut)
    cut_gz = tmp_path / "cut.gz"
    cut_gz.write_bytes(gzip.compress(BOOT)[:100])
    with pytest.raises(logdiff.DiffInputError, match=r"cut.gz: truncated or corrupt gzip data"):
        logdiff.read(cut_gz)


def test_stdin_pipes_and_compressed_logs(tmp_path):
    for name, data in (("boot.xz", lzma.compress(BOOT)), ("boot.gz", gzip.compress(BOOT)),
                       ("boot", BOOT)):
        (tmp_path / name).write_bytes(data)
        assert logdiff.read(tmp_path / name)[1] == BOOT
    assert logdiff.read("-", stdin=io.BytesIO(BOOT)) == ("<stdin>", BOOT)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(gzip.compress(BOOT)))
    writer.start()
    assert logdiff.read(fifo)[1] == BOOT
    writer.join()


def test_old_dropped_marker_and_records_after_other_text():
    # Linux 4.x: the dropped marker and the next record on one line.
    log = logdiff.parse("old", b"[    1.000000] a\n** 3 printk messages dropped ** "
                               b"[    1.100000] b\n")
    assert [r.text for r in log.records] == ["a", "b"] and [n for _, n in log.dropped] == [3]
    # A record after userspace text: its timestamp is not part of what is compared.
    a = b"Populating /dev using udev: [    3.389917] usb 1-1: new device\n"
    b = b"Populating /dev using udev: [    4.000001] usb 1-1: new device\n"
    assert kinds(a, b)[0] == []
    assert [r.text for r in logdiff.parse("A", a).records] == [
        "Populating /dev using udev:", "usb 1-1: new device"]


def test_logs_without_timestamps_and_kmsg_dumps_compare():
    assert kinds(b"a\nb\nc\n", b"a\nc\n")[0] == ["missing"]
    dump = (b"5,0,0,-;Linux version 6.12.118-rig-vanilla (rig@printk-rig)\n"
            b"6,1,0,-;Command line: console=ttyS0,115200 panic=-1\n")
    log = logdiff.parse("kmsg", dump)
    assert [(r.level, r.text) for r in log.records] == [
        (5, "Linux version 6.12.118-rig-vanilla (rig@printk-rig)"),
        (6, "Command line: console=ttyS0,115200 panic=-1")]
    console = (b"[    0.000000] Linux version 6.12.118-rig-vanilla (rig@printk-rig)\n"
               b"[    0.000000] Command line: console=ttyS0,115200 panic=-1\n")
    got, res = kinds(dump, console)
    assert got == ["note"]
    assert logdiff.Result(logdiff.parse("A", dump), logdiff.parse("B", console), res,
                          []).equal


def test_main_exit_codes_text_and_json(tmp_path, capsys):
    a, b = tmp_path / "a.log", tmp_path / "b"
    a.write_bytes(BOOT)
    b.mkdir()
    (b / "console.log").write_bytes(BOOT.replace(b"rig-init: start", b"rig-init: begin"))
    out = io.StringIO()
    assert diffstream.main(str(a), str(a), False, None, True, False, out) == 0
    assert out.getvalue().endswith("equal\n")
    out = io.StringIO()
    assert diffstream.main(str(a), str(b), False, None, True, True, out) == 1
    assert "\033[" in out.getvalue() and "-000: rig-init: start" in out.getvalue()
    out = io.StringIO()
    assert diffstream.main(str(a), str(b), True, None, True, False, out) == 1
    doc = json.loads(out.getvalue())
    assert doc["equal"] is False and doc["counts"] == {"changed": 1}
    assert doc["differences"][0]["a_line"] == doc["differences"][0]["b_line"]
    assert diffstream.main(str(a), str(tmp_path / "x"), True, None, True, False, io.StringIO()) == 2
    assert "no such file" in capsys.readouterr().err


# --- real captures ------------------------------------------------------------
# Console transcripts as the 8250 wrote them (CRLF), captured on 2026-12-04 with
# `python3 -m rig boot --flavor F --cmdline ...` on the rig's 6.12 kernels:
#   vanilla-boot         rig.steps=kmsg,dmesg; .dmesg-raw and .dmesg-decode are
#                        util-linux `dmesg --raw` / `--decode` in that guest (side
#                        channel), LF, the raw one with syslog <N> prefixes
#   *-panic-nmi          rig.steps=run rigprintk.scen=P rigprintk.crash=panic-nmi
#                        rigprintk.crash_cpu=1
#   *-oops               rig.steps=run rigprintk.scen=P rigprintk.crash=oops-task
#   patched-s9-flood-a/b the first 270 lines of two S9 runs: dropped lines, some cut
# None has CONFIG_PRINTK_CALLER's [T1]/[C1] field: neither the rig's kernels nor
# the host's have it, so that form is tested on a snippet above only.
CONSOLES = ["vanilla-boot", "vanilla-panic-nmi", "vanilla-oops", "patched-panic-nmi",
            "patched-oops"]
PANIC_LINE = "Kernel panic - not syncing: rigprintk: panic in NMI on CPU 1"


def real(name: str) -> bytes:
    return lzma.decompress((DATA / f"{name}.xz").read_bytes())


def console(name: str) -> bytes:
    return real(f"{name}.console")


def lineno_of(data: bytes, needle: str) -> int:
    return next(n for n, ln in enumerate(data.decode().split("\n"), 1) if needle in ln)


def of_kind(res, kind):
    return [d for d in res if d.kind == kind]


@pytest.mark.parametrize("name", CONSOLES + ["vanilla-boot.dmesg-raw",
                                             "vanilla-boot.dmesg-decode"])
def test_each_real_log_parses_and_equals_itself(name):
    data = real(name if "dmesg" in name else f"{name}.console")
    log = logdiff.parse(name, data)
    assert len(log.records) > 150
    # Every line is understood: a record with its timestamp, or a cut line.
    assert all(r.ts_usec is not None for r in log.records)
    assert [r.cpu is not None for r in log.records] == [name.startswith("patched")] * len(
        log.records)
    assert kinds(data, data)[0] == []
    assert logdiff.unified(log, logdiff.parse(name, data)) == []


@pytest.mark.parametrize("name", CONSOLES)
def test_a_real_crlf_log_equals_its_lf_conversion(name):
    crlf = console(name)
    assert crlf.count(b"\r\n") == crlf.count(b"\n")
    lf = crlf.replace(b"\r\n", b"\n")
    assert kinds(crlf, lf)[0] == []
    a, b = logdiff.parse("crlf", crlf), logdiff.parse("lf", lf)
    assert [(r.lineno, r.raw) for r in a.records] == [(r.lineno, r.raw) for r in b.records]
    assert a.split == b.split


def test_real_dmesg_raw_levels_decode_and_the_console_of_the_same_boot():
    raw, decoded = real("vanilla-boot.dmesg-raw"), real("vanilla-boot.dmesg-decode")
    log = logdiff.parse("raw", raw)
    assert {r.level for r in log.records} == {4, 5, 6, 7}
    assert raw.startswith(b"<5>[    0.000000] Linux version 6.12")
    # --decode's "kern  :notice: " carries the same levels as --raw's "<5>".
    assert kinds(raw, decoded)[0] == []
    assert logdiff.unified(log, logdiff.parse("decode", decoded)) == []
    # The console of that boot lacks the debug records (console loglevel 7) and
    # has those printed after dmesg ran; it has no levels at all.
    got, res = kinds(raw, console("vanilla-boot"))
    assert set(got) == {"missing", "extra", "note"}
    by_line = {r.lineno: r for r in log.records}
    assert all(by_line[d.a_line].level == 7 for d in of_kind(res, "missing"))
    assert [d.detail for d in of_kind(res, "note")] == [
        f"level only in A ({len(log.records)} of {len(log.records)} records), not compared"]
    last = max(r.ts_usec for r in log.records)
    extra = logdiff.parse("console", console("vanilla-boot"))
    late = [r.raw for r in extra.records if r.ts_usec > last]
    assert [d.detail for d in of_kind(res, "extra")] == [f"in B, not in A: {t}" for t in late]
    # Levels on one side only do not make every line of the unified diff differ.
    lines = logdiff.unified(log, extra)
    assert not any(ln.startswith(("-<", "+<", " <")) for ln in lines)
    assert len([ln for ln in lines if ln[:1] in "-+" and ln[:3] not in ("---", "+++")]) == \
        len(of_kind(res, "missing")) + len(of_kind(res, "extra"))


def test_real_vanilla_and_patched_panics():
    a, b = console("vanilla-panic-nmi"), console("patched-panic-nmi")
    got, res = kinds(a, b)
    assert set(got) == {"moved", "changed", "note", "split"}
    n = len(logdiff.parse("B", b).records)
    assert [d.detail for d in of_kind(res, "note")] == [
        f"CPU field only in B ({n} of {n} records), not compared"]
    # The patched console was taken over: cut lines, one of them a replay line.
    assert [d.detail for d in of_kind(res, "split")] == [
        "only in B: [    1.381171] 001: ",
        "only in B: [    1.992561] 001: rig-init: module: rigprintk loaded (scen=P c",
        "only in B: ** replayin"]
    # The NMI's emergency lines went out before the backlog on the patched kernel.
    assert any(PANIC_LINE in d.detail for d in of_kind(res, "moved"))
    assert "'printk: legacy console [ttyS0] enabled' -> 'printk: console [ttyS0] enabled'" in \
        [d.detail for d in of_kind(res, "changed")]
    # The CPU field on one side does not make every line of the unified diff differ.
    lines = logdiff.unified(logdiff.parse("A", a), logdiff.parse("B", b))
    assert not any(ln.startswith("+001: ") for ln in lines)
    assert "+printk: console [ttyS0] enabled" in lines


def test_real_panic_against_a_real_oops():
    a, b = console("vanilla-panic-nmi"), console("vanilla-oops")
    got, res = kinds(a, b)
    assert {"missing", "extra"} <= set(got)
    missing = {d.a_line: d.detail for d in of_kind(res, "missing")}
    assert missing[lineno_of(a, PANIC_LINE)] == \
        "in A, not in B: [    2.086387] " + PANIC_LINE
    extra = [d.detail for d in of_kind(res, "extra")]
    assert any("BUG: kernel NULL pointer dereference" in d for d in extra)
    assert any("Oops: Oops: 0002 [#1] PREEMPT SMP" in d for d in extra)
    # Between two patched runs the matched records' CPU fields are compared.
    got, res = kinds(console("patched-panic-nmi"), console("patched-oops"))
    assert "CPU 1 -> 0: Run /init as init process" in [d.detail for d in of_kind(res, "cpu")]


@pytest.mark.parametrize("name,cpu", [("vanilla-oops", ""), ("patched-oops", "000: ")])
def test_a_real_log_with_one_line_edited(name, cpu):
    a = console(name)
    b = a.replace(b"rig-init: step run begin", b"rig-init: step run started")
    got, res = kinds(a, b)
    line = lineno_of(a, "rig-init: step run begin")
    assert got == ["changed"] and (res[0].a_line, res[0].b_line) == (line, line)
    assert res[0].detail == "'rig-init: step run begin' -> 'rig-init: step run started'"
    log_a, log_b = logdiff.parse("A", a), logdiff.parse("B", b)
    k = next(i for i, r in enumerate(log_a.records, 1) if r.lineno == line)
    diff = logdiff.unified(log_a, log_b)
    assert diff[2:] == [f"@@ -{k - 3},7 +{k - 3},7 @@"] + \
        [" " + logdiff.render(r) for r in log_a.records[k - 4:k - 1]] + \
        [f"-{cpu}rig-init: step run begin", f"+{cpu}rig-init: step run started"] + \
        [" " + logdiff.render(r) for r in log_a.records[k:k + 3]]


def test_a_real_log_cut_in_the_middle_of_a_line():
    whole = console("vanilla-panic-nmi")
    last = b"[    2.096836] Kernel Offset: disabled\r\n"
    assert whole.endswith(last)
    # Cut inside the text: the last record changed.
    got, res = kinds(whole, whole[:-len(last)] + b"[    2.096836] Kernel Off")
    assert got == ["changed"] and res[0].detail == "'Kernel Offset: disabled' -> 'Kernel Off'"
    # Cut inside the timestamp: the record is missing and the rest of its line is
    # a line cut short, not a record of its own.
    cut = whole[:-len(last)] + b"[    2.0968"
    got, res = kinds(whole, cut)
    assert got == ["missing", "split"]
    assert of_kind(res, "missing")[0].detail.endswith("Kernel Offset: disabled")
    assert of_kind(res, "split")[0].b_line == cut.count(b"\n") + 1


def test_a_real_per_cpu_order_change():
    a = console("patched-oops")
    lines = a.split(b"\r\n")
    i = lineno_of(a, "#PF: supervisor write access") - 1
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    got, res = kinds(a, b"\r\n".join(lines))
    assert sorted(set(got)) == ["cpu-order", "moved"]
    assert of_kind(res, "cpu-order")[0].detail == (
        "CPU 1: A has '#PF: supervisor write access in kernel mode' where B has "
        "'#PF: error_code(0x0002) - not-present page'")


def test_a_real_level_change():
    raw = real("vanilla-boot.dmesg-raw")
    got, res = kinds(raw, raw.replace(b"<5>[    2.514360]", b"<3>[    2.514360]"))
    assert got == ["level"] and res[0].detail == "level 5 -> 3: rig-init: step kmsg begin"


def test_real_timestamps_beyond_a_tolerance():
    a, b = console("vanilla-panic-nmi"), console("vanilla-oops")
    assert "timestamp" not in kinds(a, b, ts_tolerance_s=5)[0]
    late = of_kind(kinds(a, b, ts_tolerance_s=0.05)[1], "timestamp")
    assert late and all(abs(float(d.detail.split()[0])) > 50 for d in late)
    assert any(d.detail.endswith(" ms (tolerance 50 ms): Run /init as init process")
               for d in late)


def test_real_dropped_counts_and_cut_dropped_lines():
    a, b = console("patched-s9-flood-a"), console("patched-s9-flood-b")
    log = logdiff.parse("A", a)
    assert log.dropped == [(251, 953), (253, 1)]
    # "** 53 printk messages dr", "** replayin": cut by the emergency lines, no records.
    assert not any(r.raw.startswith("*") for r in log.records)
    assert {(231, "** replaying p"), (233, "** 53 printk messages dr")} <= set(log.split)
    got, res = kinds(a, b)
    assert got.count("dropped") == 1
    assert of_kind(res, "dropped")[0].detail == (
        "dropped counts A [953 at line 251, 1 at line 253], B [250 at line 238, "
        "350 at line 241, 450 at line 244, 199 at line 249, 199 at line 254, 299 at line 257]")


def test_a_real_line_holding_two_records():
    a = console("vanilla-panic-nmi")
    b = a.replace(b"[    2.079240] rigprintk: scen=P run begin\r\n",
                  b"[    2.079240] rigprintk: scen=P r[    2.084254] un begin\r\n")
    got, res = kinds(a, b)
    assert "interleaved" in got
    assert of_kind(res, "interleaved")[0].b_line == lineno_of(a, "scen=P run begin")


def test_real_inputs_exit_codes(tmp_path, capsys):
    good = tmp_path / "good.log"
    good.write_bytes(console("vanilla-boot"))
    # A compressed capture given as is equals its text; an empty log differs
    # from a boot; a cut capture and a run directory without console.log are
    # named with exit 2.
    xz = (DATA / "vanilla-boot.console.xz").read_bytes()
    cases = {"capture.xz": (xz, 0, ""),
             "empty.log": (b"", 1, ""),
             "cut.xz": (xz[:len(xz) // 2], 2, "truncated or corrupt xz data"),
             "rundir": (None, 2, "no such file (give a log file or a run directory")}
    for name, (data, code, msg) in cases.items():
        path = tmp_path / name
        if data is None:
            path.mkdir()
        else:
            path.write_bytes(data)
        for a, b in ((good, path), (path, good)):
            assert diffstream.main(str(a), str(b), False, None, True, False, io.StringIO()) == code
            err = capsys.readouterr().err
            assert (not msg and not err) or (err.startswith(f"rig diff: {path}") and msg in err), err



@pytest.mark.parametrize("name", CONSOLES)
def test_a_removed_line_is_named_even_among_masked_twins(name):
    # Every line removed in turn from a real log: the report names that line,
    # also where masking makes it equal to a neighbour (stack words, code
    # offsets).
    data = console(name)
    log = logdiff.parse("A", data)
    twins = [r for i, r in enumerate(log.records)
             if any(o.key == r.key and o.text != r.text
                    for o in log.records[max(0, i - 3):i + 4] if o is not r)]
    lines = data.split(b"\n")
    for rec in twins:
        cut = b"\n".join(lines[:rec.lineno - 1] + lines[rec.lineno:])
        res = logdiff.compare(log, logdiff.parse("B", cut))
        named = [d.a_line for d in res if d.kind == "missing"]
        assert named == [rec.lineno], (rec.raw, [d.detail for d in res][:3])


def test_both_logs_from_stdin_is_bad_input(capsys):
    assert diffstream.main("-", "-", False, None, True, False, io.StringIO()) == 2
    assert "both logs are '-'" in capsys.readouterr().err


def test_kmsg_dump_records_with_newlines_callers_and_a_cut_last_line():
    dump = b"6,1,1000,-,caller=C1;hello\\x0aworld\n6,2,2000,-,caller=T5;x\n6,3,30"
    log = logdiff.parse("kmsg", dump)
    assert [(r.text, r.cpu) for r in log.records] == [("hello", 1), ("world", 1), ("x", None)]
    console = b"[    0.001000][    C1] hello\n[    0.001000][    C1] world\n[    0.002000][   T5] x\n"
    got, res = kinds(dump, console)
    assert got == ["note"] and "level only in A" in res[0].detail    # the console has none
