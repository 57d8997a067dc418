"""A kernel build starts from the cached build whose source is nearest.

Every kernel the rig builds (the flavors, a mutant, the gate's revisions,
the series check) is the same recipe on a source that differs from another
one's by a few files: the gate's base is the patched flavor's source, a
mutant is the patched flavor plus one patch, the series check walks from
the vanilla source to the patched one. So each build records what its
source holds (source-files.txt: the sha1 of every file), and a new build
looks for the finished build, of the same configuration fragment,
toolchain and recipe, whose source differs from its own by the fewest
files. It takes that build's tree, objects included and mtimes kept (the
sources as hard links, since no one writes one in place; the objects as a
copy), and writes only the files that differ: Kbuild then recompiles what
they touch and what their Kconfig changes touch, and nothing else. With no
base near enough the build starts from the fresh source, as a first build
does. The build's manifest says which (started_from).

The result is the build a clean tree gives: Kbuild's own dependency
tracking decides what to rebuild (as it does for a developer's second
make), and the link counter (.version, the "#1" of the banner) is reset.
"""
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from rig.artifacts.cache import MANIFEST
from rig.artifacts.runner import run_logged
from rig.paths import cache_root

LISTING = "source-files.txt"
# Beyond this many differing files a clean build costs about what an
# incremental one does, and the copy is not worth it.
MAX_DIFFERING_FILES = 2000
# Kernel builds of the rig that keep their tree: a possible base.
BASE_STEPS = "kernel-*"
# What a base must share with the build: the rest (source, flavor's release
# suffix, series) is what Kbuild's dependency tracking takes care of.
SAME_INPUTS = ("config fragment rig.config", "profile fragment", "toolchain", "recipe")
# What a build that compiled everything started from.
FRESH = "the fresh source"


def file_digest(path: str) -> str:
    """sha1 of a file's bytes (of a symlink: of its target), with its exec bit."""
    if os.path.islink(path):
        return "l" + hashlib.sha1(os.readlink(path).encode()).hexdigest()
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return ("x" if os.access(path, os.X_OK) else "f") + h.hexdigest()


def source_listing(tree: Path, skip_top: Iterable[str] = ()) -> Dict[str, str]:
    """Relative path -> file_digest for every file below tree."""
    listing = {}
    skipped = set(skip_top)
    for root, dirs, files in os.walk(tree):
        if root == str(tree):
            dirs[:] = [d for d in dirs if d not in skipped]
        for name in files:
            path = os.path.join(root, name)
            listing[os.path.relpath(path, tree)] = file_digest(path)
        for name in dirs:       # a symlink to a directory is listed, not followed
            path = os.path.join(root, name)
            if os.path.islink(path):
                listing[os.path.relpath(path, tree)] = file_digest(path)
    return listing


def write_listing(path: Path, listing: Dict[str, str]) -> None:
    path.write_text("".join(f"{digest} {rel}\n" for rel, digest in sorted(listing.items())))


def read_listing(path: Path) -> Dict[str, str]:
    listing = {}
    for line in path.read_text().splitlines():
        digest, rel = line.split(" ", 1)
        listing[rel] = digest
    return listing


def differing(a: Dict[str, str], b: Dict[str, str]) -> List[str]:
    """Paths whose file is in one listing only, or differs."""
    return sorted(p for p in set(a) | set(b) if a.get(p) != b.get(p))


@dataclass
class Base:
    """A finished kernel build to start from, and what differs from it."""
    step: str
    key: str
    tree: Path                  # its source tree, objects inside
    differing: List[str]        # relative paths the new source has otherwise

    def describe(self) -> str:
        return f"{self.step} {self.key} ({len(self.differing)} file(s) differ)"


def nearest(listing: Dict[str, str], inputs: Dict[str, str],
            exclude: Optional[Path] = None) -> Optional[Base]:
    """The finished build of the same configuration, toolchain and recipe
    whose source differs from listing by the fewest files, if few enough.
    Of equals, one of the same flavor (its release suffix unchanged), then
    the newest."""
    best: Optional[Base] = None
    best_rank: Tuple = ()
    for manifest_path in cache_root().glob(f"{BASE_STEPS}/*/{MANIFEST}"):
        entry = manifest_path.parent
        if exclude is not None and entry == exclude:
            continue
        try:
            m = json.loads(manifest_path.read_text())
            outputs = m["outputs"]
            if any(m["inputs"].get(k) != inputs.get(k) for k in SAME_INPUTS):
                continue
            their_listing = read_listing(entry / outputs["source_listing"])
            tree = entry / outputs["source_dir"]
        except (OSError, ValueError, KeyError):
            continue                # an older build without a listing, or a broken one
        if not tree.is_dir():
            continue
        diff = differing(listing, their_listing)
        if len(diff) > MAX_DIFFERING_FILES:
            continue
        rank = (len(diff), m["inputs"].get("flavor") != inputs.get("flavor"),
                _newest_first(m["built_at"]))
        if best is None or rank < best_rank:
            best, best_rank = Base(m["step"], m["key"], tree, diff), rank
    return best


def _newest_first(built_at: str) -> Tuple[int, ...]:
    """A sort key that puts a later "YYYY-MM-DD HH:MM:SS" first."""
    return tuple(-int(n) for n in re.findall(r"\d+", built_at))


def started_from(base: Optional[Base]) -> str:
    """The manifest's record of where a build started (start_tree's result)."""
    return base.describe() if base is not None else FRESH


def compiled_everything(outputs: dict) -> bool:
    """Whether a kernel build, by its manifest's outputs, compiled the whole
    tree (older builds, from before started_from, all did)."""
    return outputs.get("started_from", FRESH) == FRESH


def copy_tree(label: str, base: Path, tree: Path, objdir: str, log: Path) -> None:
    """tree: the base's source as hard links, its objects as a copy. Nothing
    writes a source file in place (Kbuild writes only into the object
    directory, patch(1) and start_tree replace a file), so the links cost
    the 1.6 GB of the source no write; the objects are Kbuild's to update."""
    tree.mkdir()
    sources = sorted(str(p) for p in base.iterdir() if p.name != objdir)
    run_logged(label, ["cp", "-al", *sources, str(tree)], log)
    if (base / objdir).exists():
        run_logged(label, ["cp", "-a", str(base / objdir), str(tree / objdir)], log)


def start_tree(label: str, fresh: Path, tree: Path, inputs: Dict[str, str], objdir: str,
               log: Path, listing_file: Path) -> Optional[Base]:
    """Make tree the source in fresh, for a build: a copy of the nearest
    build with the differing files written over it, or fresh itself (moved)
    when no build is near. Records fresh's listing in listing_file."""
    listing = source_listing(fresh, skip_top=[objdir])
    write_listing(listing_file, listing)
    base = nearest(listing, inputs, exclude=listing_file.parent)
    if base is None:
        fresh.rename(tree)
        return None
    print(f"[{label}] starting from the build of {base.describe()}", flush=True)
    copy_tree(label, base.tree, tree, objdir, log)
    for rel in base.differing:
        src, dst = fresh / rel, tree / rel
        if dst.is_symlink() or dst.is_file():
            dst.unlink()
        elif dst.is_dir():
            shutil.rmtree(dst)
        if not (src.is_symlink() or src.is_file()):
            continue                    # gone from the new source
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy(src, dst)       # a new mtime: Kbuild sees it changed
    # The link counter: the next link is #1 again, as in a clean build.
    (tree / objdir / ".version").unlink(missing_ok=True)
    shutil.rmtree(fresh)
    return base
