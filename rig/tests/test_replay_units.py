"""Run bundles, replay and the determinism check, without booting: bundle
errors, input resolution, the first-difference report and run matching."""
import json

import pytest

from rig import bundle
from rig.artifacts.cache import sha256_file
from rig.evidence.uartlog import HEADER, RECORD
from rig.tools import determinism, replay


def test_load_names_a_missing_or_broken_bundle(tmp_path):
    with pytest.raises(bundle.BundleError, match="no bundle.json"):
        bundle.load(tmp_path)
    (tmp_path / "bundle.json").write_text("{trunc")
    with pytest.raises(bundle.BundleError, match="not valid JSON"):
        bundle.load(tmp_path)
    (tmp_path / "bundle.json").write_text(json.dumps({"format": bundle.FORMAT, "argv": []}))
    with pytest.raises(bundle.BundleError, match="no 'request'"):
        bundle.load(tmp_path)
    (tmp_path / "bundle.json").write_text(json.dumps({"format": 99}))
    with pytest.raises(bundle.BundleError, match="format 99"):
        bundle.load(tmp_path)


def test_an_input_is_found_in_the_cache_or_named_with_its_rebuild_command(tmp_path, monkeypatch):
    monkeypatch.setenv("RIG_CACHE", str(tmp_path / "cache"))
    cached = tmp_path / "cache" / "kernel-patched" / "abc" / "build" / "bzImage"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"kernel")
    entry = {"step": "kernel-patched", "key": "abc", "file": "build/bzImage",
             "path": str(tmp_path / "gone" / "bzImage"), "sha256": sha256_file(cached),
             "rebuild": "python3 -m rig build kernel --flavor patched"}
    assert replay.resolve_input("kernel", entry, "patched") == cached
    cached.write_bytes(b"rebuilt differently")
    with pytest.raises(replay.ReplayError, match="another sha256.*rig build kernel --flavor "
                                                 "patched"):
        replay.resolve_input("kernel", entry, "patched")
    cached.unlink()
    with pytest.raises(replay.ReplayError, match="is missing: not at"):
        replay.resolve_input("kernel", entry, "patched")


def test_first_difference_names_the_console_line_and_the_register_record():
    old, new = b"a\nbcd\nef\n", b"a\nbXd\nef\n"
    msg = replay.first_difference("console.log", old, new)
    assert "byte 3" in msg and "console line 2" in msg and "'bXd'" in msg
    log = bytes(HEADER.size) + bytes(RECORD.size * 3)
    other = bytearray(log)
    other[HEADER.size + RECORD.size * 2 + 5] = 1
    assert "register-log record 2" in replay.first_difference("uart.log", log, bytes(other))
    assert "prefix" in replay.first_difference("side.bin", b"abc", b"ab")


def test_compare_reports_identical_and_changed_files(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        for n in bundle.EVIDENCE:
            (d / n).write_bytes(b"same\n")
    (b / "side.bin").write_bytes(b"other\n")
    verdicts = {v.name: v for v in replay.compare(a, bundle.evidence_hashes(a), b)}
    assert verdicts["console.log"].identical and not verdicts["side.bin"].identical
    (a / "uart.log").write_bytes(b"edited after the run\n")
    assert "changed after the run" in replay.compare(a, bundle.evidence_hashes(b), b)[1].detail


def test_substitute_replaces_every_occurrence_of_the_old_paths():
    argv = ["q", "-chardev", "file,path=/old/run/side.bin", "-kernel", "/c/bz"]
    assert replay.substitute(argv, {"/old/run": "/new", "/c/bz": "/d/bz"}) == \
        ["q", "-chardev", "file,path=/new/side.bin", "-kernel", "/d/bz"]


def test_determinism_matches_boots_across_runs_and_names_the_differing_runs():
    k1, k2 = ("t::a", "S10", 1), ("t::b", "S7", 1)
    same = {"console.log": "x", "uart.log": "y", "side.bin": "z"}
    runs = [{k1: same, k2: same}, {k1: same, k2: same},
            {k1: same, k2: dict(same, uart_log="w")}, {k1: same}]
    assert determinism.disagreements(runs) == {k2: [3, 4]}
    assert determinism.disagreements(runs[:2]) == {}


def test_boots_of_orders_a_tests_deterministic_boots_by_the_run_counter(tmp_path):
    for counter, name, det in ((10, "b", True), (2, "a", True), (11, "b", True),
                               (12, "host", False)):
        d = tmp_path / f"20261204-000000-{name}-patched-77-{counter}"
        d.mkdir()
        (d / "bundle.json").write_text(json.dumps(
            {"format": bundle.FORMAT, "argv": [], "request": {}, "inputs": {}, "run_dir": str(d),
             "name": name, "test": "t::x",
             "determinism": {"icount_shift": 4} if det else None}))
    boots = determinism.boots_of(tmp_path)
    assert sorted(boots) == [("t::x", "a", 1), ("t::x", "b", 1), ("t::x", "b", 2)]
    assert boots[("t::x", "b", 2)].name.endswith("-11")
