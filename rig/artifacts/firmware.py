"""The firmware the rig's QEMU loads, as a cache step of its own.

QEMU finds its firmware by name in its -L directories. The rig's machine
(pc, -kernel, no VGA, no NIC) loads three files, found with strace:
SeaBIOS's bios-256k.bin, and linuxboot_dma.bin and kvmvapic.bin of
qemu-system-data. They are copied into the cache, keyed by their own
sha256, so that every boot loads firmware the cache recorded and checks
(rig.artifacts.cache), a package upgrade is a new entry (and new snapshot
templates) instead of a silent change under golden transcripts, and the
remote backend sends the same bytes to its hosts.
"""
from pathlib import Path

from rig import paths
from rig.artifacts.cache import Step, ensure, sha256_file
from rig.artifacts.locate import Artifact
from rig.inputs import BadInput

FILES = ("bios-256k.bin", "linuxboot_dma.bin", "kvmvapic.bin")


def source(name: str) -> Path:
    """Where the system has the file (the first of paths.FIRMWARE_DIRS)."""
    for d in paths.FIRMWARE_DIRS:
        if (d / name).is_file():
            return d / name
    raise BadInput(f"firmware {name} is in none of "
                   f"{', '.join(str(d) for d in paths.FIRMWARE_DIRS)}: install seabios and "
                   "qemu-system-data (`make deps`)")


def firmware_step() -> Step:
    return Step("firmware", {name: sha256_file(source(name)) for name in FILES})


def _copy(out: Path) -> dict:
    for name in FILES:
        (out / name).write_bytes(source(name).read_bytes())
    return {name: name for name in FILES}


def firmware() -> Artifact:
    """The firmware entry, checked, or made on a miss or when damaged (a
    copy of three small files); its directory is QEMU's -L."""
    step = firmware_step()
    manifest = ensure(step, _copy, quiet_hit=True)
    manifest["dir"] = str(step.dir)
    return Artifact(manifest)
