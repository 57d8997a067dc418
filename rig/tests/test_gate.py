"""ci/gate end to end on a real kernel git tree (rig.tests.kernel_tree: 6.12,
the seed series as commits, a branch with one mutant committed): the mutant's
branch regresses the CPU-tagging property and the gate says so (exit 1); a
comment change passes (exit 0); a head that panics at boot cannot be judged
(exit 2). Four kernels to build the first time, each from the nearest one
built before (the first from the patched flavor's), cached after."""
import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from rig import paths
from rig.artifacts.cache import MANIFEST
from rig.tests.kernel_tree import BASE_TAG, MUTANT_BRANCH, kernel_git_tree

pytestmark = [pytest.mark.builds, pytest.mark.boots]

SUBSET = "scenarios/test_s02_cpu_tagging.py"
HARMLESS = paths.REPO / "rig/tests/data/gate-harmless-comment.patch"
DOES_NOT_BOOT = paths.REPO / "rig/tests/data/gate-does-not-boot.patch"


def gate(out, *args):
    proc = subprocess.run([str(paths.REPO / "ci/gate"), "--tree", str(kernel_git_tree()),
                           "--base", BASE_TAG, "--out", str(out), *args, "--", SUBSET],
                          capture_output=True, text=True, cwd=paths.REPO)
    print(proc.stdout[-6000:], proc.stderr[-3000:])
    return proc


def test_a_mutant_commit_regresses_cpu_tagging_and_the_gate_names_it(tmp_path):
    proc = gate(tmp_path, "--head", MUTANT_BRANCH)
    assert proc.returncode == 1, f"gate exit {proc.returncode}:\n{proc.stderr[-2000:]}"
    summary = (tmp_path / "summary.txt").read_text()
    assert "REGRESSED: scenarios.test_s02_cpu_tagging::" in summary
    assert "CPU field 0" in summary, summary         # the property, in the test's words
    assert "verdict: REGRESSION" in proc.stdout
    failures = ET.parse(tmp_path / "junit.xml").getroot().findall(".//failure")
    assert failures and all("test_s02" in f.text or "CPU" in f.get("message")
                            for f in failures)
    assert "not ok 3 gate" in (tmp_path / "results.ktap").read_text()
    kcidb = json.loads((tmp_path / "kcidb.json").read_text())
    head_build = [b["id"] for b in kcidb["builds"] if "head" in b["id"]][0]
    head_status = {t["status"] for t in kcidb["tests"] if t["build_id"] == head_build}
    base_status = {t["status"] for t in kcidb["tests"] if t["build_id"] != head_build}
    assert "FAIL" in head_status and base_status == {"PASS"}


def test_a_comment_change_passes_the_gate(tmp_path):
    proc = gate(tmp_path, "--patch", str(HARMLESS))
    assert proc.returncode == 0, f"gate exit {proc.returncode}:\n{proc.stderr[-2000:]}"
    assert "verdict: no regression" in (tmp_path / "summary.txt").read_text()
    kcidb = json.loads((tmp_path / "kcidb.json").read_text())
    assert [c["patchset_hash"] != "" for c in kcidb["checkouts"]] == [False, True]
    schema = json.loads((Path(__file__).parent / "data" / "kcidb-v04_03.schema.json").read_text())
    jsonschema.validate(kcidb, schema, format_checker=jsonschema.FormatChecker())


def test_a_head_that_does_not_boot_cannot_be_judged(tmp_path):
    proc = gate(tmp_path, "--patch", str(DOES_NOT_BOOT))
    assert proc.returncode == 2, f"gate exit {proc.returncode}:\n{proc.stderr[-2000:]}"
    assert "CANNOT JUDGE: head (" in proc.stderr and ") does not boot: panic" in proc.stderr
    assert "ci/gate test: this kernel does not boot" in proc.stderr   # its last lines
    assert not (tmp_path / "base.junit.xml").exists()       # no suite ran on either side


def test_a_patch_that_does_not_apply_stops_before_any_build(tmp_path):
    bad = tmp_path / "bad.patch"
    bad.write_text(HARMLESS.read_text().replace(" *  linux/kernel/printk.c",
                                                " *  linux/kernel/printk-old.c"))
    proc = gate(tmp_path / "out", "--patch", str(bad))
    assert proc.returncode == 2
    assert "does not apply" in proc.stderr and "kernel/printk/printk.c" in proc.stderr
    assert "kernel-gate" not in proc.stdout          # nothing was built


def gate_build(commit: str) -> dict:
    """The manifest of the gate's kernel of commit (no series on top)."""
    for manifest in (paths.cache_root() / "kernel-gate").glob(f"*/{MANIFEST}"):
        m = json.loads(manifest.read_text())
        if m["inputs"]["kernel source"] == f"git commit {commit}" and \
                m["inputs"]["flavor"] == "vanilla":
            return m
    raise AssertionError(f"no kernel-gate build of {commit} in {paths.cache_root()}")


def test_the_gates_kernels_start_from_the_nearest_build():
    """Identical trees are not compiled twice, and a commit that changes one
    file recompiles what it touches: the base (the seed series as commits)
    starts from the patched flavor's build, the mutant from the base's
    (rig.artifacts.kbuild_reuse). Run after the tests above built them."""
    tree = kernel_git_tree()
    commit = {rev: subprocess.run(["git", "-C", str(tree), "rev-parse", rev], check=True,
                                  capture_output=True, text=True).stdout.strip()
              for rev in (BASE_TAG, MUTANT_BRANCH)}
    base, mutant = gate_build(commit[BASE_TAG]), gate_build(commit[MUTANT_BRANCH])
    if "started_from" not in base["outputs"]:
        pytest.skip("the gate's kernels were built before builds recorded their base")
    assert base["outputs"]["started_from"].endswith(" (0 file(s) differ)"), base["outputs"]
    assert mutant["outputs"]["started_from"] == \
        f"kernel-gate {base['key']} (1 file(s) differ)", mutant["outputs"]
    assert mutant["outputs"]["build_objects"] < base["outputs"]["build_objects"] < 200, \
        "an incremental build compiled more than what the change touches"
