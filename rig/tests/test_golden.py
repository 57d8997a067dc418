"""Golden transcripts: normalization, file names, update summary and the
mismatch report (on a real patched transcript)."""
import lzma
from pathlib import Path

from rig import config
from rig.evidence import golden

DATA = Path(__file__).parent / "data"


def real_console() -> bytes:
    return lzma.decompress((DATA / "patched-panic-nmi.console.xz").read_bytes())


def test_normalize_zeroes_timestamps_masks_addresses_offsets_and_drops_cr():
    line = (b"[   12.345678] 001: RIP: 0010:panic+0x1a2/0x3b0 RSP: 0018:ffffc90000003f38 "
            b"pid: 77\x1b\r\n")
    assert golden.normalize(line) == [
        "[    0.000000] 001: RIP: 0010:panic+0x<off>/0x<size> RSP: 0018:<hex> pid: <pid>\\x1b"]


def test_a_real_transcript_normalizes_to_a_readable_parseable_log():
    lines = golden.normalize(real_console())
    assert lines and all("\r" not in ln for ln in lines)
    assert any("Kernel panic - not syncing" in ln for ln in lines)
    assert not any("ffffffff8" in ln for ln in lines), "kernel addresses left unmasked"


def test_file_name_leaves_the_flavor_out_of_the_params(tmp_path, monkeypatch):
    monkeypatch.setenv(config.VARIABLES["golden_dir"], str(tmp_path))
    p = golden.file_name("test_module.py", "test_crash", {"flavor": "patched", "crash": "oops-nmi"},
                         "patched", 1)
    assert p == tmp_path / "test_module" / "test_crash-oops-nmi.patched.txt"
    assert golden.file_name("test_x.py", "test_y", {}, "vanilla", 2).name == "test_y.vanilla.2.txt"


def test_update_says_new_changed_unchanged(tmp_path):
    path, head = tmp_path / "g.txt", ["# header"]
    lines = golden.normalize(real_console())
    assert golden.update(path, lines, head).status == "new"
    assert golden.update(path, lines, head).status == "unchanged"
    edited = list(lines)
    edited[10] = edited[10] + " (edited)"
    change = golden.update(path, edited, head)
    assert (change.status, change.added, change.removed) == ("changed", 1, 1)
    assert path.read_text().startswith("# header\n")


def test_mismatch_points_at_the_changed_message_with_file_line_numbers(tmp_path):
    path = tmp_path / "g.txt"
    lines = golden.normalize(real_console())
    head = golden.header("t::x", 1, {"flavor": "patched"})
    golden.update(path, lines, head)
    assert golden.mismatch(path, lines, tmp_path / "run.txt", head) is None
    i = next(i for i, ln in enumerate(lines) if "Kernel panic - not syncing" in ln)
    changed = list(lines)
    changed[i] = changed[i].replace("Kernel panic - not syncing", "Kernel panic - not syncing!")
    report = golden.mismatch(path, changed, tmp_path / "run.txt", head)
    assert "1 changed" in report and "not syncing!" in report, report
    assert f"A:{i + 1 + 4} " in report, report        # four header lines before the body
    assert "make golden" in report
    assert "-" + lines[i].split("] ", 1)[1][:20] in report.replace("\n-", "\n-")


def test_missing_golden_file_says_how_to_record_it(tmp_path):
    report = golden.mismatch(tmp_path / "none.txt", ["x"], tmp_path / "run.txt", [])
    assert "no golden transcript" in report and "make golden" in report


SUMMARY = {"flavor": "patched", "icount_shift": 4,
           "kernel": {"release": "6.12.118-rig-patched", "source": "Debian 6.12.118-1"}}


def recorded(tmp_path, summary=SUMMARY, test="t::x"):
    path, lines = tmp_path / "g.txt", golden.normalize(real_console())
    golden.update(path, lines, golden.header(test, 1, summary))
    return path, lines


def test_a_golden_file_of_another_kernel_shift_or_test_is_named_not_compared(tmp_path):
    head = golden.header("t::x", 1, SUMMARY)
    for other in ({**SUMMARY, "icount_shift": 3},
                  {**SUMMARY, "kernel": {"release": "6.12.119-rig-patched",
                                         "source": "Debian 6.12.119-1"}}):
        path, lines = recorded(tmp_path, other)
        report = golden.mismatch(path, lines, tmp_path / "run.txt", head)
        assert report.startswith(f"golden file {path} is of another boot: its header says "), report
        assert "make golden" in report
    path, lines = recorded(tmp_path, test="t::y")
    assert "golden transcript: t::y, boot 1" in golden.mismatch(path, lines, tmp_path / "r", head)


def test_an_unreadable_or_empty_golden_file_is_named(tmp_path):
    head = golden.header("t::x", 1, SUMMARY)
    path, lines = recorded(tmp_path)
    path.write_bytes(b"# golden transcript: \xff\xfe\n")
    assert golden.mismatch(path, lines, tmp_path / "r", head) == (
        f"golden file {path} is not UTF-8 text (byte 21): damaged; record it again with "
        "`make golden` and review `git diff golden/`")
    path.write_text("\n".join(head) + "\n")
    assert golden.mismatch(path, lines, tmp_path / "r", head).startswith(
        f"golden file {path} has a header and no transcript")
