"""Checks of the patch series itself, patch by patch, on a tree of its own:
it applies with no fuzz, `scripts/checkpatch.pl --strict` reports nothing,
and the kernel builds with it and the patches before it (one logical change
per patch, each building on its own).

The result is cached like a build, keyed by the same inputs as the patched
kernel, so it runs again exactly when the series, the source or the config
changes. Failures are recorded, not raised: the suite's test reads them and
names the patch and the problem.
"""
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from rig.artifacts.cache import Step, ensure, sha256_bytes
from rig.artifacts import kbuild_reuse
from rig.artifacts.kernel import (OBJDIR, SERIES, compile_tree, configure, kbuild_env,
                                  kernel_inputs, kernel_source, planned)
from rig.artifacts.patching import apply_patch, read_series
from rig.artifacts.runner import BuildError, minutes, run_logged, tail

LABEL = "series-check"
RECIPE = ("from the nearest kernel build's tree; git apply --check; patch --fuzz=0; "
          "checkpatch.pl --strict --quiet; olddefconfig + make all after each")


def series_check_step() -> Step:
    inputs = dict(kernel_inputs("patched", kernel_source()))
    inputs["recipe"] = sha256_bytes(RECIPE.encode())[:16]
    return Step(LABEL, inputs)


def _check_one(tree: Path, patch: Path, log: Path) -> dict:
    result = {"patch": patch.name, "applies": False, "offsets": [], "checkpatch": None,
              "builds": False}
    result["git_apply"], result["git_apply_error"] = git_apply_check(tree, patch)
    try:
        report = apply_patch(tree, patch, SERIES, log)
    except BuildError as e:
        result["apply_error"] = str(e)
        return result
    result["applies"] = True
    result["offsets"] = re.findall(r"Hunk #\d+ succeeded at \d+ \(offset -?\d+ lines?\)", report)
    result["checkpatch_status"], result["checkpatch"] = run_checkpatch(tree, patch)
    return result


def git_apply_check(tree: Path, patch: Path):
    """(ok, message) of `git apply --check` (no fuzz) on tree, which is not a
    git work tree: the ceiling keeps git from finding a repository above it,
    where it would skip the paths outside the current directory."""
    env = dict(os.environ, GIT_CEILING_DIRECTORIES=str(tree.parent))
    cp = subprocess.run(["git", "apply", "--check", "-p1", str(patch)], cwd=tree, env=env,
                        capture_output=True, text=True)
    return cp.returncode == 0, (cp.stdout + cp.stderr).strip()


def run_checkpatch(tree: Path, patch: Path):
    """(exit status, report) of the tree's checkpatch.pl --strict on patch."""
    cp = subprocess.run(["perl", "scripts/checkpatch.pl", "--strict", "--quiet", str(patch)],
                        cwd=tree, capture_output=True, text=True)
    return cp.returncode, (cp.stdout + cp.stderr).strip()


def time_left(results: list, total: int) -> str:
    """After the first patch's full build, the rest are incremental: their
    mean so far times the patches left."""
    incremental = [r["build_seconds"] for r in results[1:] if "build_seconds" in r]
    if not incremental:
        return ""
    left = sum(incremental) / len(incremental) * (total - len(results))
    return f" (about {minutes(left)} left)"


def _build(out: Path) -> dict:
    src = kernel_source()
    fresh, tree, log = out / "fresh", out / "src", out / "check.log"
    print(f"[{LABEL}] unpacking {src.version}", flush=True)
    src.copy_to(fresh, log)
    # From the vanilla build when there is one: each patch is then an
    # incremental build from the start.
    base = kbuild_reuse.start_tree(LABEL, fresh, tree, kernel_inputs("patched", src), OBJDIR,
                                   log, out / kbuild_reuse.LISTING)
    results, make = [], None
    patches = read_series(SERIES)
    for i, patch in enumerate(patches, 1):
        print(f"[{LABEL}] patch {i}/{len(patches)}: {patch.name}{time_left(results, len(patches))}",
              flush=True)
        result = _check_one(tree, patch, log)
        results.append(result)
        if not result["applies"]:
            break            # later patches cannot be judged on a wrong tree
        start = time.monotonic()
        try:
            if make is None:
                make = configure(LABEL, tree, log, "patched")
                # A first build from the fresh source compiles everything.
                total = planned(tree) if base is None else (None, "")
            else:
                run_logged(LABEL, make + ["olddefconfig"], log, env=kbuild_env())
                total = (None, "")             # later ones what the patch touched
            compile_tree(LABEL, make, log, total)
            result["builds"] = True
        except BuildError as e:
            result["build_error"] = str(e)
            result["build_log_tail"] = tail(log)
        result["build_seconds"] = round(time.monotonic() - start, 1)
    # The tree (objects included) is large and only the verdicts matter.
    shutil.rmtree(tree, ignore_errors=True)
    ok = len(results) == len(patches) and all(
        r["applies"] and r["git_apply"] and r["builds"] and r.get("checkpatch_status") == 0 and not r["checkpatch"]
        for r in results)
    return {"results": results, "ok": ok, "log": "check.log",
            "started_from": kbuild_reuse.started_from(base)}


def build_series_check(force: bool = False) -> dict:
    step = series_check_step()
    manifest = ensure(step, _build, force=force)
    manifest["dir"] = str(step.dir)
    return manifest
