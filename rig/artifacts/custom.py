"""A kernel the user built: any bzImage plus the build directory it came
from (for the test module), run as the flavor "custom" (pytest --kernel).

The rig does not build it; it checks that the build directory can build
an out-of-tree module and that the configuration has what the rig's boot
and evidence need, and names what is missing. Its cache key (for the module
and initramfs built against it) is the hash of the image, the .config and
Module.symvers, so a rebuilt kernel gets a rebuilt module.
"""
from pathlib import Path
from typing import Dict

from rig import config
from rig.artifacts.cache import sha256_bytes, sha256_file
from rig.artifacts.runner import BuildError
from rig.inputs import check_kernel_image

CUSTOM = "custom"

# What the rig's boot needs of a kernel configuration, and why.
REQUIRED = {
    "CONFIG_PRINTK": "printk itself",
    "CONFIG_SERIAL_8250": "ttyS0 and ttyS1 are 16550A UARTs",
    "CONFIG_SERIAL_8250_CONSOLE": "the console under test is console=ttyS0",
    "CONFIG_BLK_DEV_INITRD": "rig-init comes in an initramfs",
    "CONFIG_DEVTMPFS": "rig-init mounts devtmpfs for /dev/kmsg and /dev/ttyS1",
    "CONFIG_MODULES": "the test module is loaded at start",
    "CONFIG_MAGIC_SYSRQ": "the panic step uses /proc/sysrq-trigger",
    "CONFIG_DEBUG_FS": "the late console's log (S13) is read from debugfs",
}


def build_dir_of(image: Path) -> Path:
    """<build>/arch/x86/boot/bzImage -> <build>, the usual place of a bzImage."""
    parts = image.resolve().parts
    if len(parts) > 4 and parts[-4:] == ("arch", "x86", "boot", "bzImage"):
        return Path(*parts[:-4])
    raise BuildError(f"--kernel {image}: cannot tell its build directory (it is not "
                     f"<build>/arch/x86/boot/bzImage): give --kernel-build DIR")


def config_of(build: Path) -> Dict[str, str]:
    out = {}
    for line in (build / ".config").read_text().splitlines():
        if line.startswith("CONFIG_") and "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
    return out


def require_option(build: Path, option: str, why: str) -> None:
    """A scenario's own need of the kernel configuration: BuildError naming
    the option and the .config that lacks it."""
    config_file = build / ".config"
    if not config_file.is_file():
        raise BuildError(f"{option} is needed ({why}), and the kernel has no {config_file} "
                         f"to tell: give --kernel-build DIR")
    if config_of(build).get(option) != "y":
        raise BuildError(f"{option} is not set in {config_file}: {why}. Enable it "
                         f"(kernel-patches/rig.config for the rig's flavors) and rebuild")


def check(image: Path, build: Path) -> None:
    for need, why in ((".config", "the kernel configuration"),
                      ("Module.symvers", "out-of-tree modules need it: run `make modules` "
                       "(or `make modules_prepare` and a full build) in it"),
                      ("include/config/kernel.release", "run `make` in it")):
        if not (build / need).is_file():
            raise BuildError(f"--kernel-build {build}: no {need} ({why})")
    config = config_of(build)
    missing = [f"{name} ({why})" for name, why in REQUIRED.items()
               if config.get(name) != "y"]
    if missing:
        raise BuildError(f"--kernel-build {build}: the configuration lacks what the rig "
                         f"needs, enable: " + "; ".join(missing))


def kernel() -> dict:
    """The custom kernel as a manifest shaped like a built flavor's."""
    cfg = config.current()
    if not cfg.custom_kernel:
        raise BuildError("the custom flavor needs a kernel: pytest --kernel BZIMAGE")
    image = Path(cfg.custom_kernel).resolve()
    check_kernel_image(image)
    build = Path(cfg.custom_build).resolve() if cfg.custom_build else build_dir_of(image)
    check(image, build)
    release = (build / "include/config/kernel.release").read_text().strip()
    key = sha256_bytes(" ".join([sha256_file(image), sha256_file(build / ".config"),
                                 sha256_file(build / "Module.symvers")]).encode())[:16]
    return {"dir": str(build), "key": key,
            "inputs": {"image": str(image), "build": str(build)},
            "outputs": {"bzImage": str(image), "build_dir": str(build),
                        "kernel_release": release, "source_version": f"user kernel {release}",
                        "patches": []}}


def use(image: Path, build=None) -> None:
    """Make image (and its build directory) the custom flavor, in this
    process, its pytest-xdist workers and its children."""
    config.set_fields(custom_kernel=str(Path(image).resolve()),
                      custom_build=str(Path(build).resolve()) if build else None)
