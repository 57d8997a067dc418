"""A kernel git tree for the gate's tests, shaped like a printk developer's:
Linux 6.12 from Debian's linux-source-6.12 as the first commit, the seed
design (kernel-patches/series) as commits on top (tag printk-seed), and a
branch that commits one mutant of kernel-patches/mutants/ on that. Built
once into the cache (step gate-test-tree), keyed by the tarball and patches."""
from pathlib import Path

from rig import paths
from rig.artifacts.cache import Step, dpkg_version, ensure, sha256_file
from rig.artifacts.kernel import MUTANTS, SERIES
from rig.artifacts.patching import read_series
from rig.artifacts.runner import run_logged

BASE_TAG = "printk-seed"
MUTANT = "emergency-cpu-zero"
MUTANT_BRANCH = f"mutant-{MUTANT}"
IDENTITY = ["-c", "user.name=printk-rig", "-c", "user.email=rig@printk-rig.invalid"]
FIXED_DATE = {"GIT_AUTHOR_DATE": "2026-12-01T00:00:00Z",
              "GIT_COMMITTER_DATE": "2026-12-01T00:00:00Z"}


def tree_step() -> Step:
    inputs = {"linux-source": f"{dpkg_version(paths.LINUX_SOURCE_PKG)} "
                              f"sha256:{sha256_file(paths.LINUX_SOURCE_TARBALL)}",
              "mutant": sha256_file(MUTANTS / f"{MUTANT}.patch"),
              "recipe": "v1: tarball commit, git am series, tag, mutant branch"}
    for p in read_series(SERIES):
        inputs[f"patch {p.name}"] = sha256_file(p)
    return Step("gate-test-tree", inputs)


def _make(out: Path) -> dict:
    tree, log = out / "linux", out / "make-tree.log"
    tree.mkdir()

    def git(*args):
        run_logged("gate-test-tree", ["git", "-C", str(tree)] + IDENTITY + list(args), log,
                   env=FIXED_DATE)
    print("[gate-test-tree] unpacking linux-source-6.12 into a git tree", flush=True)
    run_logged("gate-test-tree", ["tar", "-C", str(tree), "--strip-components=1", "-xf",
                                  str(paths.LINUX_SOURCE_TARBALL)], log)
    git("init", "-q", "-b", "master")
    print("[gate-test-tree] committing it (git add of the whole tree)", flush=True)
    git("add", "-A", "-f")      # Debian's .gitignore ends in "/*"
    git("commit", "-q", "-m", f"Linux 6.12 (Debian {paths.LINUX_SOURCE_PKG})")
    git("am", "-q", "--committer-date-is-author-date",
        *[str(p) for p in read_series(SERIES)])
    git("tag", BASE_TAG)
    git("checkout", "-q", "-b", MUTANT_BRANCH)
    git("apply", str(MUTANTS / f"{MUTANT}.patch"))
    git("commit", "-q", "-a", "-m", f"printk: {MUTANT} (a mutant: breaks one property)")
    git("checkout", "-q", "master")
    git("gc", "-q", "--auto")
    return {"tree": "linux"}


def kernel_git_tree() -> Path:
    step = tree_step()
    manifest = ensure(step, _make)
    return step.dir / manifest["outputs"]["tree"]
