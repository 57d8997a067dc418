"""Content-addressed build cache.

A build step is named (for example "kernel-patched") and described by its
inputs: a mapping from input name to a digest or version string.  The key is
the hash of that mapping, and the step's output lives in
<cache>/<step>/<key>/.  A finished build leaves manifest.json there; a
directory without one is a build that did not finish and is redone.
<cache>/<step>/last.json remembers the inputs of the newest finished build so
that a miss can say which input changed. Each use of an entry touches its
.used file, so that `rig cache prune` can drop what nothing used lately.
"""
import fcntl
import functools
import hashlib
import json
import shutil
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterable, Optional

from rig.paths import cache_root


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    st = path.stat()
    return _sha256_file(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _sha256_file(path: str, size: int, mtime_ns: int) -> str:
    """Cached per process by (path, size, mtime): the kernel tarball is 150 MB."""
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


def lock_of(entry: Path) -> Path:
    """The lock a build of <cache>/<step>/<key>/ holds (beside the entry,
    so that removing the entry does not take it)."""
    return entry.parent / f"{entry.name}.lock"


def mark_used(entry: Path) -> None:
    try:
        (entry / USED).touch()
    except OSError:         # a cache someone else owns: its use goes unrecorded
        pass


@dataclass
class Step:
    name: str
    inputs: Dict[str, str]

    @property
    def key(self) -> str:
        blob = json.dumps(self.inputs, sort_keys=True).encode()
        return sha256_bytes(blob)[:16]

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
        """The finished build's record; reading it marks the entry used
        (rig.artifacts.prune keeps what was used lately)."""
        m = json.loads(self.manifest_path.read_text())
        mark_used(self.dir)
        return m

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


@contextmanager
def locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def say(step: Step, msg: str) -> None:
    print(f"[{step.name}] {msg}", flush=True)


def ensure(step: Step, build: Callable[[Path], dict], force: bool = False) -> dict:
    """Return the step's manifest, building it first on a cache miss.

    build(out_dir) does the work and returns the outputs to record (paths
    relative to out_dir, figures); it must raise on failure.
    """
    with locked(lock_of(step.dir)):
        if step.is_built() and not force:
            m = step.manifest()
            say(step, f"cache hit {step.key} (built {m['built_at']}, {step.dir})")
            return m
        why = "forced rebuild" if force else describe_change(step.last_inputs(), step.inputs)
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
            "built_at": time.strftime("%Y-%m-%d %H:%M:%S"),
            "build_seconds": round(time.monotonic() - start, 1),
        }
        tmp = step.manifest_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(manifest, indent=2) + "\n")
        tmp.replace(step.manifest_path)
        (step.step_dir / "last.json").write_text(json.dumps(manifest, indent=2) + "\n")
        say(step, f"built in {manifest['build_seconds']} s")
        return manifest
