"""Where the rig keeps things: the repository, the build cache, run directories."""
from pathlib import Path
from typing import Optional

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

# Kernel profiles, a dimension beside the flavor: the same source built with
# kernel-patches/rig.config alone (default), or with a profile's fragment
# kernel-patches/profile-NAME.config on top of it.
DEFAULT_PROFILE = "default"
PROFILES = (DEFAULT_PROFILE, "rt", "debug")
NOT_RT = (DEFAULT_PROFILE, "debug")     # the profiles without PREEMPT_RT


def profile() -> str:
    """The kernel profile this process builds and boots (RIG_PROFILE, --profile)."""
    return config.current().profile or DEFAULT_PROFILE


def profile_fragment(name: str) -> Path:
    """A profile's config fragment (the default profile has none)."""
    return KERNEL_PATCHES / f"profile-{name}.config"


def profile_suffix(profile_name: Optional[str] = None) -> str:
    """How a name tells the profile (this process's when None): nothing on
    the default profile, so its names stay as they were before profiles,
    -PROFILE on another (kernel-patched-rt, runs/mutants-debug)."""
    name = profile_name or profile()
    return "" if name == DEFAULT_PROFILE else f"-{name}"


def kernel_name(flavor: str, profile_name: str) -> str:
    """How results, cache steps and golden files name a flavor on a profile:
    the flavor alone on the default profile, FLAVOR-PROFILE on the others."""
    return flavor + profile_suffix(profile_name)


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
