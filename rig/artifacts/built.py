"""Locate built artifacts (building them on request) for the harness and the CLI."""
from rig.artifacts import custom
from rig.artifacts import initramfs as i
from rig.artifacts import qemu as q
from rig.artifacts.kernel import kernel_artifact
from rig.artifacts.locate import Artifact, locate

kernel = kernel_artifact


def qemu(build: bool = False, force: bool = False) -> Artifact:
    return locate(q.qemu_step(), q.build_qemu, build, force, "QEMU", "qemu")


def initramfs(flavor: str, build: bool = False, force: bool = False,
              variant: str = "") -> Artifact:
    """The flavor's initramfs; variant "bench" is rig bench's (standard +
    rig-preinit + the ringbuffer stress module), built when missing."""
    if variant == "bench":
        return locate(i.bench_initramfs_step(flavor),
                      lambda force: i.build_bench_initramfs(flavor, force),
                      True, force, f"the {flavor} bench initramfs", "bench")
    if variant:
        raise ValueError(f"no initramfs variant {variant!r} (only 'bench')")
    # No make target builds it for a user's kernel: build it (module included) when missing.
    build = build or flavor == custom.CUSTOM
    return locate(i.initramfs_step(flavor), lambda force: i.build_initramfs(flavor, force),
                  build, force, f"the {flavor} initramfs", "initramfs")
