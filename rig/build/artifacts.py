"""Locate built artifacts (building them on request) for the harness and the CLI."""
from pathlib import Path

from rig.build.runner import BuildError


class Artifact(dict):
    """A manifest plus helpers to turn its relative outputs into paths."""

    def path(self, name: str) -> Path:
        return Path(self["dir"]) / self["outputs"][name]


def _locate(step, build_fn, build: bool, force: bool, what: str, make_target: str):
    if build or force:
        return Artifact(build_fn(force=force))
    if not step.is_built():
        raise BuildError(f"{what} is not built for the current inputs (expected in "
                         f"{step.dir}): run `make {make_target}`")
    m = step.manifest()
    m["dir"] = str(step.dir)
    return Artifact(m)


def kernel(flavor: str, build: bool = False, force: bool = False) -> Artifact:
    from rig.build import custom
    if flavor == custom.CUSTOM:
        return Artifact(custom.kernel())     # the user's build: never built by the rig
    from rig.build import kernel as k
    return _locate(k.kernel_step(flavor), lambda force: k.build_kernel(flavor, force),
                   build, force, f"the {flavor} kernel", "kernel")


def qemu(build: bool = False, force: bool = False) -> Artifact:
    from rig.build import qemu as q
    return _locate(q.qemu_step(), q.build_qemu, build, force, "QEMU", "qemu")


def initramfs(flavor: str, build: bool = False, force: bool = False,
              variant: str = "") -> Artifact:
    """The flavor's initramfs; variant "bench" is rig bench's (standard +
    rig-preinit + the ringbuffer stress module), built when missing."""
    from rig.build import custom
    from rig.build import initramfs as i
    if variant == "bench":
        return _locate(i.bench_initramfs_step(flavor),
                       lambda force: i.build_bench_initramfs(flavor, force),
                       True, force, f"the {flavor} bench initramfs", "bench")
    if variant:
        raise ValueError(f"no initramfs variant {variant!r} (only 'bench')")
    # No make target builds it for a user's kernel: build it (module included) when missing.
    build = build or flavor == custom.CUSTOM
    return _locate(i.initramfs_step(flavor), lambda force: i.build_initramfs(flavor, force),
                   build, force, f"the {flavor} initramfs", "initramfs")
