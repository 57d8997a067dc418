"""Quilt-style patch series: read the series file, apply it with no fuzz."""
import subprocess
from pathlib import Path
from typing import List

from rig.artifacts.runner import BuildError


def read_series(series: Path) -> List[Path]:
    """Patch files named by the series file, in order (# starts a comment)."""
    if not series.is_file():
        return []
    patches = []
    for lineno, line in enumerate(series.read_text().splitlines(), 1):
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        p = series.parent / name.split()[0]
        if not p.is_file():
            raise BuildError(f"{series}:{lineno}: patch {name} is listed but does not exist")
        patches.append(p)
    return patches


def apply_patch(tree: Path, patch: Path, series: Path, log: Path) -> str:
    """Apply one patch with no fuzz; raise naming it and showing the hunks that
    did not apply. Returns patch's own report (offsets, if any)."""
    rej = log.parent / (patch.name + ".rej")
    res = subprocess.run(["patch", "-p1", "--forward", "--batch", "--fuzz=0",
                          "--no-backup-if-mismatch", f"--reject-file={rej}",
                          "-i", str(patch)],
                         cwd=tree, capture_output=True, text=True)
    with open(log, "a") as f:
        f.write(f"$ patch -p1 < {patch}\n{res.stdout}{res.stderr}")
    if res.returncode != 0:
        hunks = rej.read_text(errors="replace") if rej.is_file() else "(no reject file)"
        raise BuildError(f"patch {patch.name} ({series.parent.name}/{series.name}) "
                         f"does not apply:\n{res.stdout}{res.stderr}"
                         f"--- failing hunk(s) ---\n{hunks}")
    return res.stdout


def apply_series(tree: Path, series: Path, log: Path) -> List[str]:
    """Apply every patch of series to tree; stop at the first one that fails."""
    applied = []
    for patch in read_series(series):
        apply_patch(tree, patch, series, log)
        applied.append(patch.name)
    return applied
