"""Content-addressed build cache.

A build step is named (for example "kernel-patched") and described by its
inputs: a mapping from input name to a digest or version string.  The key is
the hash of that mapping, and the step's output lives in
<cache>/<step>/<key>/.  A finished build leaves manifest.json there; a
directory without one is a build that did not finish and is redone.
<cache>/<step>/last.json remembers the inputs of the newest finished build so
that a miss can say which input changed. Each use of an entry touches its
.used file, so that `rig cache prune` can drop what nothing used lately.

Nothing in an entry is trusted because it is there: the manifest records
the sha256 and size of every output that is a file, and every lookup checks
them (once per process and file, keyed by its size, times and inode, so a
warm run hashes each file once). A damaged manifest or a file that changed
since its build is a CacheEntryError naming the entry and the file; ensure()
removes such an entry and builds it again, rig.artifacts.locate removes it
and says which command rebuilds it. An entry from before the rig recorded
its files gets them recorded at its first use.
"""
import functools
import hashlib
import json
import shutil
import subprocess
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterable, Optional

from rig.artifacts.runner import BuildError
from rig.locks import locked
from rig.paths import cache_root


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    st = os.stat(path)
    return _sha256_file(str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


@functools.lru_cache(maxsize=256)
def _sha256_file(path: str, size: int, mtime_ns: int, ctime_ns: int, ino: int) -> str:
    """Cached per process by the file's path, size, times and inode: the
    kernel tarball is 150 MB, and any write to a file changes its ctime."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sha256_tree(root: Path, exclude: Iterable[str] = ()) -> str:
    """Digest of every file below root: relative paths and contents."""
    excluded = set(exclude)
    h = hashlib.sha256()
    if not root.exists():
        return sha256_bytes(b"")
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel in excluded or any(part in excluded for part in path.relative_to(root).parts):
            continue
        h.update(rel.encode() + b"\0" + sha256_file(path).encode() + b"\n")
    return h.hexdigest()


def first_line(argv) -> str:
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return out.splitlines()[0].strip() if out else ""


@functools.lru_cache(maxsize=None)
def toolchain_id() -> str:
    """The compiler and linker that build kernels, QEMU and the init."""
    return f"{first_line(['gcc', '--version'])} / {first_line(['ld', '--version'])}"


DPKG_STATUS = Path("/var/lib/dpkg/status")


def mtime_ns(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def dpkg_version(pkg: str) -> Optional[str]:
    """The installed version; asked once per process until dpkg's status
    changes (every boot looks its inputs' keys up)."""
    return _dpkg_version(pkg, mtime_ns(DPKG_STATUS))


@functools.lru_cache(maxsize=64)
def _dpkg_version(pkg: str, status_mtime_ns: int) -> Optional[str]:
    res = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg],
                         capture_output=True, text=True)
    return res.stdout.strip() if res.returncode == 0 and res.stdout.strip() else None


def describe_change(old: Optional[Dict[str, str]], new: Dict[str, str]) -> str:
    """Say in words which inputs differ between the last build and now."""
    if old is None:
        return "never built with this cache"
    changed = []
    for name in sorted(set(old) | set(new)):
        if name not in old:
            changed.append(f"{name} added")
        elif name not in new:
            changed.append(f"{name} removed")
        elif old[name] != new[name]:
            changed.append(f"{name} changed")
    return ", ".join(changed) if changed else "inputs equal to the last build, output missing"


MANIFEST = "manifest.json"   # written last: a finished build
USED = ".used"      # an entry's last use: this file's mtime
FILES = "files"     # the manifest's record of its output files: name -> sha256, bytes


class CacheEntryError(BuildError):
    """A cache entry that must not be used: its manifest is damaged, or a
    file of it changed since it was built. Names the entry and the file."""


def file_records(out: Path, outputs: dict) -> Dict[str, dict]:
    """sha256 and size of every output that names a file of the entry."""
    found = {}
    for name, rel in outputs.items():
        if isinstance(rel, str) and rel and (out / rel).is_file() and \
                not (out / rel).is_symlink():
            found[name] = {"sha256": sha256_file(out / rel), "bytes": (out / rel).stat().st_size}
    return found


def manifest_problem(m) -> Optional[str]:
    """What makes a parsed manifest unusable; None if nothing."""
    if not isinstance(m, dict):
        return f"holds a {type(m).__name__}, not a JSON object"
    for key, kind in (("key", str), ("inputs", dict), ("outputs", dict), ("built_at", str)):
        if not isinstance(m.get(key), kind):
            return f"has no {key!r}" if key not in m else f"has a bad {key!r}"
    files = m.get(FILES, {})
    if not isinstance(files, dict) or not all(
            isinstance(r, dict) and isinstance(r.get("sha256"), str) and
            isinstance(r.get("bytes"), int) and isinstance(m["outputs"].get(n), str)
            for n, r in files.items()):
        return f"has a bad {FILES!r} record"
    return None


def lock_of(entry: Path) -> Path:
    """The lock a build of <cache>/<step>/<key>/ holds (beside the entry,
    so that removing the entry does not take it)."""
    return entry.parent / f"{entry.name}.lock"


def mark_used(entry: Path) -> None:
    try:
        (entry / USED).touch()
    except OSError:         # a cache someone else owns: its use goes unrecorded
        pass


class EntryFiles:
    """The files of entry <cache>/<name>/<key>/ and their checks (the
    class of a Step, and of an Entry named by a record such as a bundle)."""
    name: str
    key: str

    @property
    def step_dir(self) -> Path:
        return cache_root() / self.name

    @property
    def dir(self) -> Path:
        return self.step_dir / self.key

    @property
    def manifest_path(self) -> Path:
        return self.dir / MANIFEST

    def is_built(self) -> bool:
        return self.manifest_path.is_file()

    def manifest(self) -> dict:
        """The finished build's record, checked: the manifest whole and every
        file it records unchanged (CacheEntryError names what is not).
        Reading it marks the entry used (rig.artifacts.prune keeps what
        was used lately)."""
        try:
            m = json.loads(self.manifest_path.read_text())
        except (ValueError, UnicodeDecodeError) as e:
            raise self.damaged(f"{MANIFEST} is not valid JSON ({e})") from None
        except OSError as e:
            raise self.damaged(f"{MANIFEST} cannot be read ({e.strerror})") from None
        problem = manifest_problem(m)
        if problem:
            raise self.damaged(f"{MANIFEST} {problem}")
        if FILES not in m:
            self._record_files(m)
        for name, rec in m[FILES].items():
            self._check_file(name, self.dir / m["outputs"][name], rec)
        mark_used(self.dir)
        return m

    def damaged(self, why: str) -> CacheEntryError:
        return CacheEntryError(f"[{self.name}] cache entry {self.dir} is damaged: {why}")

    def _check_file(self, name: str, path: Path, rec: dict) -> None:
        try:
            size = path.stat().st_size
            digest = sha256_file(path) if size == rec["bytes"] else None
        except OSError as e:
            raise self.damaged(f"its {name} ({path}) cannot be read: {e.strerror}") from None
        if size != rec["bytes"]:
            raise self.damaged(f"its {name} ({path}) is {size} bytes, {rec['bytes']} when "
                               "it was built")
        if digest != rec["sha256"]:
            raise self.damaged(f"its {name} ({path}) has sha256 {digest[:16]}..., "
                               f"{rec['sha256'][:16]}... when it was built: changed since")

    def _record_files(self, m: dict) -> None:
        """An entry built before manifests recorded their files: record them
        now (what is there at its first use)."""
        m[FILES] = file_records(self.dir, m["outputs"])
        say(self, f"recorded the sha256 of its {len(m[FILES])} file(s) (an entry from "
                  "before the rig checked them)")
        try:
            write_manifest(self.manifest_path, m)
        except OSError:             # someone else's cache: checked by size from now on
            pass

    def remove(self) -> bool:
        """Drop the entry (its lock stays beside it); False if it could not
        be (someone else's cache)."""
        shutil.rmtree(self.dir, ignore_errors=True)
        return not self.dir.exists()



@dataclass(frozen=True)
class Entry(EntryFiles):
    """An existing entry by its step and key, as a record names it."""
    name: str
    key: str

    NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
    KEY_RE = re.compile(r"^[0-9a-f]{16}$")

    def __post_init__(self):
        if not (self.NAME_RE.match(self.name) and self.KEY_RE.match(self.key)):
            raise CacheEntryError(f"{self.name!r} {self.key!r} does not name a cache entry "
                                  "(a step name and a 16-digit hex key)")


@dataclass
class Step(EntryFiles):
    name: str
    inputs: Dict[str, str]

    @property
    def key(self) -> str:
        blob = json.dumps(self.inputs, sort_keys=True).encode()
        return sha256_bytes(blob)[:16]

    def last_inputs(self) -> Optional[Dict[str, str]]:
        return self._last().get("inputs")

    def last_outputs(self) -> dict:
        """What the newest finished build of this step recorded (for example
        its number of build commands, which sizes the next one's progress)."""
        return self._last().get("outputs") or {}

    def _last(self) -> dict:
        last = self.step_dir / "last.json"
        try:
            return json.loads(last.read_text()) if last.is_file() else {}
        except ValueError:
            return {}


def write_manifest(path: Path, manifest: dict) -> None:
    """Whole or not at all: a finished build is a manifest that parses."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    tmp.replace(path)


def say(step: Step, msg: str) -> None:
    print(f"[{step.name}] {msg}", flush=True)


def ensure(step: Step, build: Callable[[Path], dict], force: bool = False,
           quiet_hit: bool = False) -> dict:
    """Return the step's manifest, building it first on a cache miss (or
    when the entry is damaged); quiet_hit: say nothing on a hit.

    build(out_dir) does the work and returns the outputs to record (paths
    relative to out_dir, figures); it must raise on failure.
    """
    with locked(lock_of(step.dir)):
        why = None
        if step.is_built() and not force:
            try:
                m = step.manifest()
                if not quiet_hit:
                    say(step, f"cache hit {step.key} (built {m['built_at']}, {step.dir})")
                return m
            except CacheEntryError as e:
                say(step, f"{str(e).split('] ', 1)[1]}; removing it and building again")
                why = "the entry was damaged"
        why = why or ("forced rebuild" if force else
                      describe_change(step.last_inputs(), step.inputs))
        say(step, f"cache miss: {why}; building into {step.dir}")
        if step.dir.exists():
            shutil.rmtree(step.dir)
        step.dir.mkdir(parents=True)
        start = time.monotonic()
        outputs = build(step.dir)
        manifest = {
            "step": step.name,
            "key": step.key,
            "inputs": step.inputs,
            "outputs": outputs,
            FILES: file_records(step.dir, outputs),
            "built_at": time.strftime("%Y-%m-%d %H:%M:%S"),
            "build_seconds": round(time.monotonic() - start, 1),
        }
        write_manifest(step.manifest_path, manifest)
        (step.step_dir / "last.json").write_text(json.dumps(manifest, indent=2) + "\n")
        say(step, f"built in {manifest['build_seconds']} s")
        return manifest
