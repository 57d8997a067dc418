"""Kernel build helpers that need no compiler: fragment checks and patch series."""
import subprocess

import pytest

from rig.artifacts.kernel import config_mismatches, make_version, parse_fragment
from rig.artifacts.patching import apply_series, read_series
from rig.artifacts.runner import BuildError


def test_parse_fragment_reads_set_and_unset():
    frag = "CONFIG_SMP=y\n# CONFIG_VT is not set\n# a comment\nCONFIG_NR_CPUS=8\n"
    assert parse_fragment(frag) == {"CONFIG_SMP": "y", "CONFIG_VT": "n", "CONFIG_NR_CPUS": "8"}


def test_config_mismatches_names_each_lost_option():
    frag = "CONFIG_SMP=y\nCONFIG_PSTORE=y\n# CONFIG_VT is not set\n"
    config = "CONFIG_SMP=y\n# CONFIG_PSTORE is not set\nCONFIG_VT=y\n"
    assert config_mismatches(frag, config) == [
        "CONFIG_PSTORE: fragment wants y, .config has n",
        "CONFIG_VT: fragment wants n, .config has y"]


def test_make_version(tmp_path):
    (tmp_path / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 118\n"
                                       "EXTRAVERSION =\n")
    assert make_version(tmp_path) == "6.12.118"


def write_patch(tree, name, old, new, path="file.c"):
    (tree / "a").mkdir(exist_ok=True)
    (tree / "b").mkdir(exist_ok=True)
    (tree / "a" / path).write_text(old)
    (tree / "b" / path).write_text(new)
    diff = subprocess.run(["diff", "-u", f"a/{path}", f"b/{path}"], cwd=tree,
                          capture_output=True, text=True).stdout
    (tree / "a" / path).unlink()
    (tree / "b" / path).unlink()
    return diff


def source_and_patch_dirs(tmp_path, content):
    """A one-file source tree holding content, and an empty patch directory."""
    src, kp = tmp_path / "src", tmp_path / "kp"
    src.mkdir()
    kp.mkdir()
    (src / "file.c").write_text(content)
    return src, kp


def test_series_applies_in_order(tmp_path):
    src, kp = source_and_patch_dirs(tmp_path, "one\ntwo\nthree\n")
    (kp / "0001-a.patch").write_text(write_patch(tmp_path, "x", "one\ntwo\nthree\n",
                                                "one\n2\nthree\n"))
    (kp / "0002-b.patch").write_text(write_patch(tmp_path, "x", "one\n2\nthree\n",
                                                "one\n2\n3\n"))
    (kp / "series").write_text("# comment\n0001-a.patch\n\n0002-b.patch  # trailing\n")
    assert [p.name for p in read_series(kp / "series")] == ["0001-a.patch", "0002-b.patch"]
    log = tmp_path / "log"
    assert apply_series(src, kp / "series", log) == ["0001-a.patch", "0002-b.patch"]
    assert (src / "file.c").read_text() == "one\n2\n3\n"


def test_failing_patch_names_itself_and_shows_the_hunk(tmp_path):
    src, kp = source_and_patch_dirs(tmp_path, "completely\ndifferent\ncontent\n")
    (kp / "0001-bad.patch").write_text(write_patch(tmp_path, "x", "one\ntwo\nthree\n",
                                                  "one\nTWO\nthree\n"))
    (kp / "series").write_text("0001-bad.patch\n")
    with pytest.raises(BuildError) as e:
        apply_series(src, kp / "series", tmp_path / "log")
    msg = str(e.value)
    assert "patch 0001-bad.patch" in msg and "does not apply" in msg
    assert "FAILED" in msg and "+TWO" in msg


def test_series_naming_a_missing_patch(tmp_path):
    (tmp_path / "series").write_text("0001-gone.patch\n")
    with pytest.raises(BuildError, match="series:1: patch 0001-gone.patch is listed"):
        read_series(tmp_path / "series")
