"""Run bundles, replay and the determinism check, without booting: bundle
errors, input resolution, the first-difference report and run matching."""
import json
import re

import pytest

from rig import bundle
from rig.artifacts.cache import Step, ensure, sha256_file
from rig.evidence.uartlog import HEADER, RECORD
from rig.tools import determinism, replay, replay_trust


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


def test_an_input_comes_from_the_cache_checked_or_is_named_with_its_rebuild_command(
        tmp_path, monkeypatch):
    monkeypatch.setenv("RIG_CACHE", str(tmp_path / "cache"))
    step = Step("kernel-patched", {"src": "1"})
    ensure(step, lambda out: (out / "bzImage").write_bytes(b"kernel") and
           {"bzImage": "bzImage"})
    cached = step.dir / "bzImage"
    entry = {"step": "kernel-patched", "key": step.key, "file": "bzImage",
             "path": str(tmp_path / "gone" / "bzImage"), "sha256": sha256_file(cached),
             "rebuild": "rm -rf /"}
    assert replay_trust.resolve("kernel", entry, "patched") == cached
    with pytest.raises(bundle.BundleError, match=r"differs from the cache's .*"
                                                 r"`python3 -m rig build kernel --flavor "
                                                 r"patched`"):
        replay_trust.resolve("kernel", dict(entry, sha256="0" * 64), "patched")
    cached.write_bytes(b"kernek")           # changed in place: the entry is damaged
    with pytest.raises(bundle.BundleError, match="is damaged: its bzImage .* changed since"):
        replay_trust.resolve("kernel", entry, "patched")
    step.remove()
    with pytest.raises(bundle.BundleError, match="is not in the build cache: rebuild it"):
        replay_trust.resolve("kernel", entry, "patched")


@pytest.mark.parametrize("role,entry,problem", [
    ("qemu", {"step": "custom", "key": "", "path": "/bin/sh"},
     "the qemu must come from the cache step qemu, not 'custom'"),
    ("qemu", {"step": "qemu", "key": "../../../bin"}, "does not name a cache entry"),
    ("kernel", {"step": "kernel-vanilla", "key": "0" * 16},
     "the kernel must come from the cache step kernel-patched"),
    ("kernel", {"step": "custom", "path": "/bin/sh", "sha256": "x"},
     "a patched run's kernel comes from the cache, not from a file of the user's own"),
    ("shell", {"step": "qemu", "key": "0" * 16}, "input 'shell' is not one a boot has"),
    ("kernel", {"step": "kernel-patched", "key": "0" * 16, "file": ["x"]},
     "is not in the build cache"),
])
def test_an_input_from_outside_the_cache_is_refused(role, entry, problem):
    with pytest.raises(bundle.BundleError, match=re.escape(problem)):
        replay_trust.resolve(role, entry, "patched")


def test_only_a_custom_run_takes_a_kernel_of_the_users_own_and_only_a_bzimage():
    with pytest.raises(replay_trust.UntrustedBundle, match="the custom kernel: kernel image "
                                                           "/bin/sh: not a bzImage"):
        replay_trust.resolve("kernel", {"step": "custom", "path": "/bin/sh", "sha256": "x"},
                             "custom")


def bundle_of(**request):
    return {"flavor": "patched", "machine": {"accel": "tcg"},
            "request": dict({"flavor": "patched", "cmdline": "rig.steps=kmsg"}, **request)}


@pytest.mark.parametrize("request_fields,problem", [
    ({"qmp_when": ["x", "human-monitor-command", {"command-line": "migrate exec:id"}]},
     "a boot sends inject-nmi and nothing else"),
    ({"uart_props": {"nmi-pattern": "x,log=/etc/passwd"}}, "UART property nmi-pattern="),
    ({"uart_props": {"log": "/etc/passwd"}}, "UART property log="),
    ({"smp": "2"}, "request field smp='2' is not a int"),
    ({"cmdline": "rig.steps=bogus"}, "no step 'bogus'"),
    ({"extra_args": ["-x"]}, "request fields extra_args are not a boot request's"),
    ({"initramfs": "../../x"}, "initramfs variant"),
    ({"init_timeout_s": float("inf")}, "request field init_timeout_s=inf: from 0.1 to 86400"),
    ({"init_timeout_s": float("nan")}, "request field init_timeout_s=nan"),
    ({"icount_shift": 99}, "request field icount_shift=99: from 0 to 10"),
    ({"qmp_when": ["(a+)+$", "inject-nmi", {}]}, "a short literal console text"),
    ({"qmp_when": ["caf\u00e9\u20ac", "inject-nmi", {}]}, "a short literal console text"),
])
def test_a_request_the_rig_would_not_make_is_refused(request_fields, problem):
    with pytest.raises(replay_trust.UntrustedBundle, match=re.escape(problem)):
        replay_trust.request(bundle_of(**request_fields))


def test_a_recorded_command_line_must_be_the_rigs_path_for_path():
    rig = ["q", "-chardev", "file,id=side0,path=/new/side.bin", "-kernel", "/d/bz"]
    recorded = ["q", "-chardev", "file,id=side0,path=/old/run/side.bin", "-kernel", "/c/bz"]
    replay_trust.same_argv(recorded, rig, {"/old/run": "/new", "/c/bz": "/d/bz"})
    with pytest.raises(replay_trust.UntrustedBundle, match="argument 0 is '/bin/sh'"):
        replay_trust.same_argv(["/bin/sh"] + recorded[1:], rig,
                               {"/old/run": "/new", "/c/bz": "/d/bz"})
    with pytest.raises(replay_trust.UntrustedBundle, match="has 6 arguments, the rig makes 5"):
        replay_trust.same_argv(recorded + ["-S"], rig, {"/old/run": "/new", "/c/bz": "/d/bz"})


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
