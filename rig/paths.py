"""Where the rig keeps things: the repository, the build cache, run directories."""
from pathlib import Path

from rig import config

REPO = Path(__file__).resolve().parent.parent
KERNEL_PATCHES = REPO / "kernel-patches"
QEMU_DEVICES = REPO / "qemu-devices"
GUEST_SRC = REPO / "rig" / "guest"
# The guest/host protocol constants (rig/protocol.py is the host side).
PROTOCOL_H = GUEST_SRC / "protocol.h"

# The Debian package and tarball the kernel flavors are built from.
LINUX_SOURCE_PKG = "linux-source-6.12"
LINUX_SOURCE_TARBALL = Path("/usr/src/linux-source-6.12.tar.xz")
QEMU_SOURCE_PKG = "qemu"

# Firmware directories QEMU is pointed at with -L (seabios, qemu-system-data).
FIRMWARE_DIRS = (Path("/usr/share/seabios"), Path("/usr/share/qemu"))

FLAVORS = ("vanilla", "patched")


def cache_root() -> Path:
    """Build cache, outside the work tree so clones and CI runs share it."""
    return config.path_or(config.current().cache_root, Path.home() / ".cache" / "printk-rig")


def runs_root() -> Path:
    """Parent of per-boot run directories."""
    return config.path_or(config.current().runs_root, REPO / "runs")


def kernel_build_of(image: Path) -> Path:
    """The build directory (O=) of a kernel image at its place in the tree,
    arch/x86/boot/bzImage: where its vmlinux, System.map and .config are.
    An image elsewhere has none next to it: its own directory then."""
    image = Path(image).resolve()
    if image.parts[-4:-1] == ("arch", "x86", "boot"):
        return image.parents[3]
    return image.parent
