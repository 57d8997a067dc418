"""The rig's qemu-system-x86_64: Debian's QEMU 7.2 source + qemu-devices/.

qemu-devices/src/ is copied over the source tree (same relative paths) and
qemu-devices/patches/series hooks it into QEMU's Kconfig and meson files.
Only the x86_64 softmmu binary is built, with TCG (and KVM, used only after a
probe boot succeeds).
"""
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Optional, Tuple

from rig import paths
from rig.artifacts.cache import Step, ensure, sha256_bytes, sha256_file, sha256_tree, toolchain_id
from rig.artifacts.patching import apply_series
from rig.artifacts.runner import BuildError, ninja_progress, run_logged

DEVICE_SRC = paths.QEMU_DEVICES / "src"
DEVICE_SERIES = paths.QEMU_DEVICES / "patches" / "series"
CONFIGURE_FLAGS = [
    "--target-list=x86_64-softmmu", "--without-default-features", "--enable-tcg",
    "--enable-kvm", "--enable-fdt=system", "--enable-seccomp", "--disable-docs",
    "--disable-werror",
]
NINJA_TARGET = "qemu-system-x86_64"


APT_STATE = [Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"),
             Path("/var/lib/apt/lists")]


def apt_state() -> str:
    """What apt's answer depends on: its sources and package lists (path,
    size, mtime of each file)."""
    files = []
    for p in APT_STATE:
        files += sorted(f for f in p.iterdir() if f.is_file()) if p.is_dir() else [p]
    h = hashlib.sha256()
    for f in files:
        try:
            st = f.stat()
        except FileNotFoundError:
            continue
        h.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def source_release() -> Tuple[str, str]:
    """(version, dsc sha256) of the QEMU source apt would fetch now.

    Every boot checks the QEMU step's inputs, and apt-get takes about a
    second: the answer is kept per process, and in the cache for as long as
    apt's sources and lists are unchanged. Falls back to a source already in
    the cache when apt cannot say (offline)."""
    memo, state = src_root() / "release.json", apt_state()
    try:
        known = json.loads(memo.read_text())
        if known["apt_state"] == state:
            return known["version"], known["dsc_sha256"]
    except (OSError, ValueError, KeyError):
        pass
    res = subprocess.run(["apt-get", "source", "--print-uris", "-qq", paths.QEMU_SOURCE_PKG],
                         capture_output=True, text=True)
    for line in res.stdout.splitlines():
        m = re.match(r"^'\S+' (qemu_(\S+)\.dsc) \d+ SHA256:([0-9a-f]+)", line)
        if m:
            try:                    # a memo only: a read-only cache asks apt each time
                memo.parent.mkdir(parents=True, exist_ok=True)
                tmp = memo.with_name(f".{memo.name}.{os.getpid()}")
                tmp.write_text(json.dumps({"apt_state": state, "version": m.group(2),
                                           "dsc_sha256": m.group(3)}) + "\n")
                tmp.replace(memo)
            except OSError:
                pass
            return m.group(2), m.group(3)
    cached = sorted(src_root().glob("qemu_*.dsc"))
    if cached:
        dsc = cached[-1]
        print(f"[qemu] apt cannot list QEMU sources ({res.stderr.strip()[:200]}); "
              f"using cached {dsc.name}", flush=True)
        return dsc.name[len("qemu_"):-len(".dsc")], sha256_file(dsc)
    raise BuildError("cannot find Debian's QEMU source: apt-get source --print-uris qemu "
                     f"printed nothing ({res.stderr.strip()}). Run `make deps` (adds the "
                     "deb-src entry and runs apt-get update)")


def src_root() -> Path:
    return paths.cache_root() / "src" / "qemu"


def unpacked_source(version: str, dsc_sha: str) -> Path:
    """Debian's QEMU source with Debian's patches, unpacked once per version."""
    root = src_root()
    tree = root / f"qemu-{version}"
    if (tree / ".rig-unpacked").is_file():
        return tree
    root.mkdir(parents=True, exist_ok=True)
    dsc = root / f"qemu_{version}.dsc"
    if not dsc.is_file() or sha256_file(dsc) != dsc_sha:
        print(f"[qemu] fetching Debian source qemu {version}", flush=True)
        # apt picks the candidate version, the one --print-uris just named.
        run_logged("qemu", ["apt-get", "source", "--download-only", "-qq",
                            paths.QEMU_SOURCE_PKG], root / "fetch.log", cwd=root)
        if not dsc.is_file() or sha256_file(dsc) != dsc_sha:
            raise BuildError(f"apt-get source qemu did not fetch {dsc.name} with the "
                             f"expected sha256 {dsc_sha}: run `apt-get update` and retry")
    if tree.exists():
        shutil.rmtree(tree)
    print(f"[qemu] unpacking qemu {version}", flush=True)
    run_logged("qemu", ["dpkg-source", "-x", dsc.name, tree.name], root / "fetch.log", cwd=root)
    (tree / ".rig-unpacked").write_text(version + "\n")
    return tree


def qemu_inputs(version: Optional[str] = None, dsc_sha: Optional[str] = None) -> dict:
    if version is None:
        version, dsc_sha = source_release()
    return {
        "qemu source": f"Debian qemu {version} dsc sha256:{dsc_sha}",
        "qemu-devices/src": sha256_tree(DEVICE_SRC, exclude=["README.md"]),
        "qemu-devices/patches": sha256_tree(DEVICE_SERIES.parent),
        "toolchain": toolchain_id(),
        "recipe": sha256_bytes(" ".join(CONFIGURE_FLAGS + [NINJA_TARGET]).encode())[:16],
    }


def qemu_step() -> Step:
    return Step("qemu", qemu_inputs())


def _build(version: str, dsc_sha: str, out: Path) -> dict:
    log = out / "build.log"
    pristine = unpacked_source(version, dsc_sha)
    tree = out / "src"
    print("[qemu] copying source and applying qemu-devices/", flush=True)
    shutil.copytree(pristine, tree, symlinks=True)
    overlaid = []
    if DEVICE_SRC.is_dir():
        for f in sorted(p for p in DEVICE_SRC.rglob("*") if p.is_file()):
            rel = f.relative_to(DEVICE_SRC)
            if rel.name == "README.md":
                continue
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, tree / rel)
            overlaid.append(rel.as_posix())
    applied = apply_series(tree, DEVICE_SERIES, log)
    bld = tree / "build"
    bld.mkdir()
    print(f"[qemu] configuring (log: {log})", flush=True)
    run_logged("qemu", ["../configure"] + CONFIGURE_FLAGS, log, cwd=bld)
    print(f"[qemu] compiling {NINJA_TARGET} with -j{os.cpu_count()}", flush=True)
    run_logged("qemu", ["ninja", f"-j{os.cpu_count()}", NINJA_TARGET], log, cwd=bld,
               progress=ninja_progress)
    binary = bld / NINJA_TARGET
    ver = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                         check=True).stdout.splitlines()[0]
    return {
        "qemu-system-x86_64": f"src/build/{NINJA_TARGET}",
        "version": ver,
        "debian_source": version,
        "overlaid": overlaid,
        "patches": applied,
    }


def build_qemu(force: bool = False) -> dict:
    version, dsc_sha = source_release()
    step = Step("qemu", qemu_inputs(version, dsc_sha))
    manifest = ensure(step, lambda out: _build(version, dsc_sha, out), force=force)
    manifest["dir"] = str(step.dir)
    return manifest
