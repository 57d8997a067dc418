"""The patch series itself: each patch of kernel-patches/series applies to the
pristine source with no fuzz, is checkpatch --strict clean, and builds with
the patches before it. The check runs once per series/source/config (cached
like a build: `make series-check`); this test reads its verdicts."""
import pytest

from rig import config
from rig.artifacts.kernel import SERIES, all_mutants, kernel_artifact
from rig.artifacts.patching import read_series
from rig.artifacts.series_check import build_series_check


BUILDS = pytest.mark.builds


@pytest.fixture(scope="module")
def verdicts():
    kernel_artifact("vanilla", build=True)      # the check walks from its build
    return build_series_check()["outputs"]


@BUILDS
def test_the_check_starts_from_the_vanilla_build(verdicts):
    """Each patch is an incremental build: the first from the vanilla
    kernel's tree, whose source is the unpatched one (rig.artifacts.kbuild_reuse)."""
    assert verdicts["started_from"].startswith("kernel-vanilla ") and \
        verdicts["started_from"].endswith(" (0 file(s) differ)"), verdicts["started_from"]


@BUILDS
def test_every_patch_of_the_series_was_checked(verdicts):
    names = [r["patch"] for r in verdicts["results"]]
    assert names == [p.name for p in read_series(SERIES)], (
        f"checked {names}; a patch that does not apply stops the check there")


@BUILDS
@pytest.mark.parametrize("patch", [p.name for p in read_series(SERIES)])
def test_patch_applies_without_fuzz_is_checkpatch_clean_and_builds(verdicts, patch):
    r = next((r for r in verdicts["results"] if r["patch"] == patch), None)
    assert r is not None, f"{patch} was not reached: an earlier patch does not apply"
    assert r["applies"], f"{patch} does not apply with --fuzz=0:\n{r.get('apply_error')}"
    assert r["git_apply"], f"`git apply --check` refuses {patch}:\n{r.get('git_apply_error')}"
    assert r["checkpatch_status"] == 0 and not r["checkpatch"], (
        f"scripts/checkpatch.pl --strict on {patch}:\n{r['checkpatch']}")
    assert r["builds"], (f"the kernel does not build with {patch} and the patches before "
                         f"it:\n{r.get('build_error')}")


BAD_PATCH = """From: Rig Test <rig@example.org>
Subject: [PATCH] printk: a patch with style problems

Signed-off-by: Rig Test <rig@example.org>
---
 kernel/printk/printk.c | 1 +
 1 file changed, 1 insertion(+)

diff --git a/kernel/printk/printk.c b/kernel/printk/printk.c
--- a/kernel/printk/printk.c
+++ b/kernel/printk/printk.c
@@ -1,3 +1,4 @@
 // SPDX-License-Identifier: GPL-2.0-only
+int  x = 1 ;   
 /*
  *  linux/kernel/printk.c
"""


@BUILDS
def test_checkpatch_check_can_fail(tmp_path):
    """The check reads the tree's own checkpatch.pl: a bad patch must be reported."""
    from rig.artifacts import built as artifacts
    from rig.artifacts.series_check import run_checkpatch
    src = artifacts.kernel("vanilla").path("source_dir")
    patch = tmp_path / "bad.patch"
    patch.write_text(BAD_PATCH)
    status, report = run_checkpatch(src, patch)
    assert status != 0 and "trailing whitespace" in report, report


MUTANT_SERIES = [f"{name}.patch" for name in all_mutants()]


@BUILDS
@pytest.mark.parametrize("mutant", MUTANT_SERIES)
def test_mutant_applies_on_top_of_the_series(mutant):
    """Each mutant (make mutants) applies to the patched tree with no fuzz."""
    import subprocess
    from rig.artifacts import built as artifacts
    tree = artifacts.kernel("patched").path("source_dir")
    res = subprocess.run(["patch", "-p1", "--dry-run", "--batch", "--fuzz=0", "-i",
                          str(SERIES.parent / "mutants" / mutant)],
                         cwd=tree, capture_output=True, text=True)
    assert res.returncode == 0, f"{mutant} does not apply:\n{res.stdout}{res.stderr}"


def test_unknown_mutant_is_named(monkeypatch):
    from rig.artifacts import kernel
    from rig.artifacts.runner import BuildError
    monkeypatch.setenv(config.VARIABLES["mutant"], "no-such-mutant")
    with pytest.raises(BuildError, match="mutants: ier-not-restored"):
        kernel.mutant()
    monkeypatch.setenv(config.VARIABLES["mutant"], "ier-not-restored")
    assert kernel.mutant().name == "ier-not-restored.patch"


GOOD = """--- a/a.txt
+++ b/a.txt
@@ -1,2 +1,2 @@
 one
-two
+zwei
"""


@pytest.mark.parametrize("inside_repo", [False, True])
def test_git_apply_check_refuses_a_patch_that_needs_fuzz(tmp_path, inside_repo):
    import subprocess
    from rig.artifacts.series_check import git_apply_check
    if inside_repo:     # a repository above the tree must not make git skip the paths
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    tree = tmp_path / "src"
    tree.mkdir()
    (tree / "a.txt").write_text("one\ntwo\n")
    good, bad = tmp_path / "good.patch", tmp_path / "bad.patch"
    good.write_text(GOOD)
    bad.write_text(GOOD.replace(" one", " uno"))
    assert git_apply_check(tree, good) == (True, "")
    ok, msg = git_apply_check(tree, bad)
    assert not ok and "a.txt" in msg, msg
