"""Exit codes as documented, everywhere (rig.faults): every subcommand, and
ci/gate, met with a failure of the rig's own world (a damaged cache entry, a
build cache or runs directory it cannot use, a host that does not answer,
input that is not what it should be) exits 2, names the problem on a line
starting "error:" (or the gate's "CANNOT JUDGE"), and prints no traceback.
Exit 1 says a property of the kernel does not hold; none of these is one."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rig import paths
from rig.artifacts import initramfs, qemu
from rig.artifacts.kernel import kernel_step
from rig.tests.test_verified_inputs import copy_entry

pytestmark = pytest.mark.boots
LOG = paths.REPO / "rig" / "tests" / "data" / "vanilla-boot.console.xz"
UNREACHABLE = "qemu+tcp://127.0.0.1:1/system"       # nothing listens on port 1


def damaged_cache(where: Path) -> Path:
    """Copies of the real cache's kernel, initramfs and QEMU entries, each
    kernel's manifest cut in half."""
    cache = where / "cache"
    steps = [kernel_step(f) for f in paths.FLAVORS] + \
        [initramfs.initramfs_step(f) for f in paths.FLAVORS] + [qemu.qemu_step()]
    for step in steps:
        if not step.is_built():
            pytest.skip(f"needs {step.name} built (make build)")
        entry = copy_entry(step, cache)
        if step.name.startswith("kernel-"):
            manifest = entry / "manifest.json"
            manifest.write_text(manifest.read_text()[:200])
    (cache / "src").symlink_to(paths.cache_root() / "src")
    return cache


def a_file(where: Path) -> Path:
    f = where / "not-a-directory"
    f.write_text("")
    return f


# name: (command after `python3 -m rig`, how the world is broken, the error it names)
CASES = {
    "build, the cache a file": (["build", "initramfs", "--flavor", "patched"], "cache-file",
                                "not-a-directory"),
    "boot, a damaged entry": (["boot", "--quiet"], "damaged", "is damaged: manifest.json"),
    "boot, runs unusable": (["boot", "--quiet"], "runs-file", "not-a-directory"),
    "boot, a host down": (["boot", "--quiet", "--libvirt-uri", UNREACHABLE], "",
                          "host 127.0.0.1"),
    "run": (["run", "boot", "--flavor", "patched"], "damaged", ""),
    "flakes": (["flakes", "--runs", "1", "--", "scenarios/test_boot.py", "--flavor",
                "patched"], "damaged", "judged nothing"),
    "determinism": (["determinism", "--runs", "1", "--", "scenarios/test_s07_nmi_mid_line.py",
                     "--flavor", "patched"], "damaged", "judged nothing"),
    "golden": (["golden", "--flavor", "patched", "--", "scenarios/test_s07_nmi_mid_line.py"],
               "damaged", ""),
    "mutants": (["mutants", "--only", "MUTANT", "--", "scenarios/test_boot.py"],
                "cache-file", "a mutant did not build"),
    "diff": (["diff", "/bin/true", str(LOG)], "", "binary data"),
    "parse": (["parse", "/bin/true"], "", "binary data"),
    "results": (["results", "JUNIT"], "", "not valid XML"),
    "replay": (["replay", "BUNDLE"], "", "not valid JSON"),
    "report": (["report", "RUN"], "", "not valid JSON"),
    "bench": (["bench", "--verdict-runs", "0", "--lines", "10", "--stress-records", "10"],
              "cache-file", "not-a-directory"),
    "demo": (["demo"], "cache-file", "not-a-directory"),
    "cache prune": (["cache", "prune"], "cache-file", "not-a-directory"),
    "hosts": (["hosts", "--libvirt-uri", UNREACHABLE, "--check"], "", "127.0.0.1"),
    "mutants, one that is not": (["mutants", "--only", "no-such-mutant"], "",
                                 "--only no-such-mutant: no such mutant"),
}


def first_mutant() -> str:
    from rig.artifacts.patching import read_series
    return read_series(paths.KERNEL_PATCHES / "mutants" / "series")[0].stem


@pytest.mark.parametrize("case", list(CASES))
def test_a_failure_of_the_rigs_own_world_exits_2_by_name(case, tmp_path):
    args, broken, named = CASES[case]
    env = {"RIG_RUNS": str(tmp_path / "runs"), "RIG_GOLDEN_DIR": str(tmp_path / "golden")}
    if broken == "damaged":
        env["RIG_CACHE"] = str(damaged_cache(tmp_path))
    elif broken == "cache-file":
        env["RIG_CACHE"] = str(a_file(tmp_path))
    elif broken == "runs-file":
        env["RIG_RUNS"] = str(a_file(tmp_path) / "runs")
    junit = tmp_path / "cut.xml"
    junit.write_text('<testsuites><testsuite name="pytest"><testcase classname="a" na')
    run = tmp_path / "cut-run"
    run.mkdir()
    (run / "console.log").write_text("[    0.000000] Linux version 6.12\n")
    (run / "bundle.json").write_text('{"format": 3, "argv": [')
    (run / "summary.json").write_text('{"name": "cut')
    args = [{"JUNIT": str(junit), "BUNDLE": str(run), "RUN": str(run),
             "MUTANT": first_mutant()}.get(a, a) for a in args]
    proc = subprocess.run([sys.executable, "-m", "rig", *args], cwd=paths.REPO,
                          env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, f"{case}: exit {proc.returncode}\n{out[-3000:]}"
    assert "Traceback (most recent call last)" not in out, out[-3000:]
    assert named in out, f"{case}: {named!r} not named\n{out[-3000:]}"
    if broken == "damaged" and case != "boot, a damaged entry":
        # The pytest runs' failures carry the rig's fault, not a property's.
        assert "CacheEntryError" in out or "is damaged" in out, out[-3000:]


def test_the_gate_cannot_judge_a_tree_that_is_not_there(tmp_path):
    proc = subprocess.run([str(paths.REPO / "ci" / "gate"), "--tree", str(tmp_path / "none"),
                           "--base", "v6.12", "--head", "HEAD", "--out", str(tmp_path / "out")],
                          cwd=paths.REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "[gate] CANNOT JUDGE:" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


def test_an_unexpected_failure_is_one_line_exit_2_and_its_traceback_kept(tmp_path):
    """A bug of the rig itself (here: a run directory whose summary is a
    JSON list, which no code expects) is still not exit 1."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "console.log").write_text("[    0.000000] Linux version 6.12\n")
    (run / "summary.json").write_text("[1, 2]")
    proc = subprocess.run([sys.executable, "-m", "rig", "report", str(run)], cwd=paths.REPO,
                          capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out
    kept = [ln for ln in out.splitlines() if "traceback in " in ln]
    if kept:        # the generic handler kept it; a named error needs none
        path = Path(kept[0].rsplit("traceback in ", 1)[1].rstrip(")"))
        assert "Traceback (most recent call last)" in path.read_text()
        path.unlink()
    json.dumps(out)
    shutil.rmtree(run)
