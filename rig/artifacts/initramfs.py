"""Guest initramfs: the rig's static init (rig/guest/init.c), busybox, Debian's
util-linux dmesg with the shared libraries it links (S16: a real userspace
client of /dev/kmsg) and the flavor's build of the test module
(lib/modules/rigprintk.ko).

One archive per kernel flavor, since each carries the module built against
its own kernel.
"""
import functools
import subprocess
from pathlib import Path

from rig import paths
from rig.artifacts import cpio
from rig.artifacts.cache import (Step, dpkg_version, ensure, mtime_ns, sha256_bytes, sha256_file,
                                 toolchain_id)
from rig.artifacts.module import MODULE_NAME, PRBSTRESS, build_module, module_step
from rig.artifacts.runner import BuildError, run_logged

INIT_SRC = paths.GUEST_SRC / "init.c"
KMSGTEST_SRC = paths.GUEST_SRC / "kmsgtest.c"
LATENCY_SRC = paths.GUEST_SRC / "latency.c"
BUSYBOX = Path("/bin/busybox")
DMESG = Path("/usr/bin/dmesg")
BUSYBOX_APPLETS = ["sh", "cat", "ls", "dmesg", "echo", "mount", "sleep", "poweroff"]
CFLAGS = ["-static", "-O2", "-Wall", "-Wextra", "-Werror", "-std=gnu11"]
LAYOUT = "dirs bin dev proc sys tmp lib lib/modules; /dev/console c 5 1; /init; /bin/kmsgtest; /bin/latency; " + \
    "/usr/bin/dmesg + ldd libraries; " + \
    "/lib/modules/" + MODULE_NAME + "; /bin/busybox + applets " + ",".join(BUSYBOX_APPLETS)


def shared_libraries(binary: Path) -> list:
    """The paths ldd resolves for binary, the dynamic loader included; asked
    again only when the binary or the loader's cache changed."""
    return list(_shared_libraries(binary, mtime_ns(binary), mtime_ns(LD_SO_CACHE)))


LD_SO_CACHE = Path("/etc/ld.so.cache")


@functools.lru_cache(maxsize=8)
def _shared_libraries(binary: Path, binary_mtime_ns: int, ld_cache_mtime_ns: int) -> tuple:
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    libs = []
    for line in out.splitlines():
        parts = line.split()
        if "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
            libs.append(Path(parts[2]))
        elif parts and parts[0].startswith("/"):
            libs.append(Path(parts[0]))
    return tuple(libs)


def initramfs_inputs(flavor: str) -> dict:
    if not BUSYBOX.is_file():
        raise BuildError(f"{BUSYBOX} is missing: run `make deps` (installs busybox-static)")
    if not DMESG.is_file():
        raise BuildError(f"{DMESG} is missing: run `make deps` (installs util-linux)")
    return {
        "util-linux dmesg": f"{dpkg_version('util-linux')} sha256:{sha256_file(DMESG)} " +
                            " ".join(f"{p}:{sha256_file(p)[:16]}" for p in shared_libraries(DMESG)),
        "init.c": sha256_file(INIT_SRC),
        "protocol.h": sha256_file(paths.PROTOCOL_H),
        "fileio.h": sha256_file(paths.GUEST_SRC / "fileio.h"),
        "kmsgtest.c": sha256_file(KMSGTEST_SRC),
        "latency.c": sha256_file(LATENCY_SRC),
        "busybox": f"{dpkg_version('busybox-static')} sha256:{sha256_file(BUSYBOX)}",
        "libc": f"libc6-dev {dpkg_version('libc6-dev')}",
        "toolchain": toolchain_id(),
        "recipe": sha256_bytes((" ".join(CFLAGS) + LAYOUT).encode())[:16],
        "test module": module_step(flavor).key,
        "flavor": flavor,
    }


def initramfs_step(flavor: str) -> Step:
    return Step(f"initramfs-{flavor}", initramfs_inputs(flavor))


def _build(flavor: str, out: Path) -> dict:
    module = build_module(flavor)
    module_ko = Path(module["dir"]) / module["outputs"]["module"]
    init_bin = out / "init"
    run_logged("initramfs", ["gcc"] + CFLAGS + ["-o", str(init_bin), str(INIT_SRC)],
               out / "build.log")
    subprocess.run(["strip", str(init_bin)], check=True)
    kmsgtest_bin = out / "kmsgtest"
    run_logged("initramfs", ["gcc"] + CFLAGS + ["-o", str(kmsgtest_bin), str(KMSGTEST_SRC)],
               out / "build.log")
    subprocess.run(["strip", str(kmsgtest_bin)], check=True)
    latency_bin = out / "latency"
    run_logged("initramfs", ["gcc"] + CFLAGS + ["-o", str(latency_bin), str(LATENCY_SRC)],
               out / "build.log")
    subprocess.run(["strip", str(latency_bin)], check=True)
    entries = [cpio.directory(d) for d in ("bin", "dev", "proc", "sys", "tmp",
                                            "lib", "lib/modules")]
    entries.append(cpio.chardev("dev/console", 5, 1))
    entries.append(cpio.regular("init", init_bin.read_bytes()))
    entries.append(cpio.regular("bin/kmsgtest", kmsgtest_bin.read_bytes()))
    entries.append(cpio.regular("bin/latency", latency_bin.read_bytes()))
    entries.append(cpio.regular(f"lib/modules/{MODULE_NAME}", module_ko.read_bytes()))
    entries += dmesg_entries()
    entries.append(cpio.regular("bin/busybox", BUSYBOX.read_bytes()))
    entries += [cpio.symlink(f"bin/{a}", "busybox") for a in BUSYBOX_APPLETS]
    archive = out / "initramfs.cpio"
    archive.write_bytes(cpio.pack(entries))
    return {"initramfs": "initramfs.cpio", "sha256": sha256_file(archive),
            "bytes": archive.stat().st_size, "module_sha256": sha256_file(module_ko)}


def dmesg_entries() -> list:
    """util-linux dmesg and its libraries, each at the path the loader looks for."""
    files = [DMESG] + shared_libraries(DMESG)
    dirs = sorted({d for f in files for d in _parents(f)}, key=lambda d: d.count("/"))
    entries = [cpio.directory(d) for d in dirs if d not in ("lib",)]
    entries += [cpio.regular(str(f).lstrip("/"), f.read_bytes()) for f in files]
    return entries


def _parents(path: Path):
    parts = path.parts[1:-1]
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def build_initramfs(flavor: str, force: bool = False) -> dict:
    step = initramfs_step(flavor)
    manifest = ensure(step, lambda out: _build(flavor, out), force=force)
    manifest["dir"] = str(step.dir)
    return manifest


# The bench's initramfs: the standard archive with a second one appended (the
# kernel unpacks concatenated cpio archives in turn) that adds rig-preinit and
# the ringbuffer stress module; booted with rdinit=/bin/rig-preinit (bench).
PREINIT_SRC = paths.GUEST_SRC / "preinit.c"
PREINIT = "bin/rig-preinit"


def bench_initramfs_step(flavor: str) -> Step:
    return Step(f"initramfs-bench-{flavor}", {
        "initramfs": initramfs_step(flavor).key,
        "preinit.c": sha256_file(PREINIT_SRC),
        "prbstress module": module_step(flavor, PRBSTRESS).key,
        "toolchain": toolchain_id(),
        "recipe": sha256_bytes((" ".join(CFLAGS) + PREINIT).encode())[:16],
    })


def _build_bench(flavor: str, out: Path) -> dict:
    base = build_initramfs(flavor)
    stress = build_module(flavor, module=PRBSTRESS)
    preinit = out / "rig-preinit"
    run_logged("initramfs-bench", ["gcc"] + CFLAGS + ["-o", str(preinit), str(PREINIT_SRC)],
               out / "build.log")
    subprocess.run(["strip", str(preinit)], check=True)
    extra = cpio.pack([
        cpio.regular(PREINIT, preinit.read_bytes()),
        cpio.regular(f"lib/modules/{PRBSTRESS.name}.ko",
                     (Path(stress["dir"]) / stress["outputs"]["module"]).read_bytes()),
    ])
    archive = out / "initramfs.cpio"
    archive.write_bytes((Path(base["dir"]) / base["outputs"]["initramfs"]).read_bytes() + extra)
    return {"initramfs": "initramfs.cpio", "sha256": sha256_file(archive),
            "bytes": archive.stat().st_size,
            "module_sha256": base["outputs"]["module_sha256"]}


def build_bench_initramfs(flavor: str, force: bool = False) -> dict:
    step = bench_initramfs_step(flavor)
    manifest = ensure(step, lambda out: _build_bench(flavor, out), force=force)
    manifest["dir"] = str(step.dir)
    return manifest
