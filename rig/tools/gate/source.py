"""The two kernels a gate compares: revisions of a user's git tree (or a base
revision plus a patch file), exported with `git archive` and built by the
rig's own recipe into the build cache, keyed by commit id and patch digest,
so that the same revision is built once whatever clone it comes from."""
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from rig.artifacts.cache import Step, ensure, sha256_file
from rig.artifacts.kernel import KernelSource, build_source, clean_build_total, kernel_inputs
from rig.artifacts.patching import apply_patch
from rig.artifacts.runner import BuildError, run_logged
from rig.faults import RigFault


class GateError(RigFault, RuntimeError):
    """The gate cannot compare: a bad tree, revision or patch, or a failed build."""


def git(repo: Path, *args: str, env: Optional[dict] = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})))


def resolve(repo: Path, rev: str) -> str:
    """The full commit id of rev in repo, or a GateError naming what is wrong."""
    if not repo.is_dir():
        raise GateError(f"--tree {repo}: no such directory")
    if git(repo, "rev-parse", "--git-dir").returncode != 0:
        raise GateError(f"--tree {repo}: not a git checkout (the gate reads revisions "
                        "with git; for a plain tree use KERNEL_SRC= with make test)")
    res = git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if res.returncode != 0:
        raise GateError(f"--tree {repo}: no commit {rev!r} (try `git -C {repo} log "
                        "--oneline` for the revisions there)")
    return res.stdout.strip()


def check_patch_applies(repo: Path, commit: str, patch: Path) -> None:
    """git apply --check of patch against commit's tree, without a checkout:
    a patch that does not apply is named with git's report of the hunk."""
    if not patch.is_file():
        raise GateError(f"--patch {patch}: no such file")
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        res = git(repo, "read-tree", commit, env=env)
        if res.returncode == 0:
            res = git(repo, "apply", "--cached", "--check", "-v", str(patch.resolve()),
                      env=env)
    if res.returncode != 0:
        raise GateError(f"--patch {patch} does not apply to {commit[:12]}:\n"
                        f"{(res.stdout + res.stderr).strip()}")


@dataclass
class Revision(KernelSource):
    """One side of the comparison: a commit of repo, maybe with a patch on top."""
    label: str = ""                 # "base" or "head"
    commit: str = ""
    patch: Optional[Path] = None

    @classmethod
    def of(cls, label: str, repo: Path, rev: str, patch: Optional[Path] = None):
        commit = resolve(repo, rev)
        if patch is not None:
            check_patch_applies(repo, commit, patch)
            patch = patch.resolve()
        subject = git(repo, "log", "-1", "--format=%s", commit).stdout.strip()
        version = f"git {commit[:12]} ({subject})" + (f" + {patch.name}" if patch else "")
        return cls("git", repo.resolve(), version, label, commit, patch)

    @property
    def patch_sha256(self) -> Optional[str]:
        return sha256_file(self.patch) if self.patch else None

    @property
    def name(self) -> str:
        """What a report calls it: the commit, and the patch if any."""
        return self.commit[:12] + (f"+{self.patch.name}" if self.patch else "")

    def digest(self) -> str:
        # The tree's path is not part of it: the same commit is the same kernel.
        return f"git commit {self.commit}" + (
            f" + patch sha256:{self.patch_sha256}" if self.patch else "")

    def copy_to(self, dst: Path, log: Path) -> None:
        dst.mkdir(parents=True)
        run_logged("kernel-src", ["sh", "-c", 'git -C "$0" archive --format=tar "$1" | '
                                  'tar -C "$2" -xf -', str(self.path), self.commit, str(dst)],
                   log)
        if self.patch:
            apply_patch(dst, self.patch, self.patch, log)


def build(rev: Revision, with_series: bool) -> dict:
    """The revision's kernel from the cache (step kernel-gate), built on a miss
    by the rig's recipe, with kernel-patches/series on top when asked."""
    flavor = "patched" if with_series else "vanilla"
    step = Step("kernel-gate", kernel_inputs(flavor, rev))
    last_total = clean_build_total(step)
    print(f"[gate] {rev.label}: kernel {rev.version}"
          + (" + kernel-patches/series" if with_series else ""), flush=True)
    try:
        manifest = ensure(step, lambda out: build_source(flavor, rev, out, last_total,
                                                            f"gate-{rev.label}"))
    except BuildError as e:
        raise GateError(f"{rev.label} ({rev.name}) does not build:\n{e}") from None
    manifest["dir"] = str(step.dir)
    return manifest
