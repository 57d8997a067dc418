"""rig cache prune [--unused-for HOURS] [--dry-run]: remove the build cache's
entries that no build or boot used for that long (default a week), so that
the keys older sources and recipes left behind do not fill the disk.

An entry is <cache>/<step>/<key>/; its last use is the mtime of its .used
file (rig.artifacts.cache marks it at every cache hit), or of its manifest
if it was never used since it was built. An entry without a manifest is a
build that did not finish; it goes too once it is that old, unless a build
holds its lock right now. ccache keeps its own size (ccache -M) and is left
to it; so are the downloaded sources."""
import fcntl
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

from rig.artifacts.cache import MANIFEST, USED, lock_of
from rig.artifacts.runner import BuildError
from rig.paths import cache_root

NOT_STEPS = {"ccache", "src"}
DEFAULT_HOURS = 7 * 24


@dataclass
class Entry:
    path: Path
    last_use: float         # seconds since the epoch
    finished: bool

    @property
    def step(self) -> str:
        return self.path.parent.name


def last_use(entry: Path) -> Optional[float]:
    for name in (USED, MANIFEST):
        try:
            return (entry / name).stat().st_mtime
        except OSError:
            continue
    try:
        return entry.stat().st_mtime
    except OSError:
        return None


def entries(root: Path) -> List[Entry]:
    found = []
    for step in sorted(p for p in root.iterdir() if p.is_dir() and p.name not in NOT_STEPS):
        for entry in sorted(p for p in step.iterdir() if p.is_dir()):
            used = last_use(entry)
            if used is not None:
                found.append(Entry(entry, used, (entry / MANIFEST).is_file()))
    return found


def building(entry: Path) -> bool:
    """A build holds the entry's lock (rig.artifacts.cache.locked)."""
    lock = lock_of(entry)
    if not lock.exists():
        return False
    with open(lock, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
    return False


def size_of(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if not p.is_symlink() and p.is_file())


def prune(unused_for_h: float = DEFAULT_HOURS, dry_run: bool = False,
          root: Optional[Path] = None) -> List[Entry]:
    """Remove (or with dry_run only list) the entries unused for that long."""
    root = root or cache_root()
    if root.exists() and not root.is_dir():
        raise BuildError(f"build cache {root}: not a directory (RIG_CACHE names a file?)")
    if not root.is_dir():
        print(f"[prune] no build cache at {root}: nothing to remove", flush=True)
        return []
    cutoff = time.time() - unused_for_h * 3600
    found = entries(root)
    gone = [e for e in found if e.last_use < cutoff and not building(e.path)]
    freed = 0
    for e in gone:
        size = size_of(e.path)
        freed += size
        age_h = (time.time() - e.last_use) / 3600
        print(f"[prune] {'would remove' if dry_run else 'removing'} {e.step}/{e.path.name}"
              f"{'' if e.finished else ' (unfinished build)'}: unused for {age_h:.0f} h, "
              f"{size / 2**30:.2f} GB", flush=True)
        if not dry_run:
            shutil.rmtree(e.path, ignore_errors=True)
            lock_of(e.path).unlink(missing_ok=True)
    kept = len(found) - len(gone)
    print(f"[prune] {'would free' if dry_run else 'freed'} {freed / 2**30:.2f} GB in "
          f"{len(gone)} entries; {kept} entries used in the last {unused_for_h:g} h kept "
          f"({root})", flush=True)
    return gone
