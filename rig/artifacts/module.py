"""The in-guest kernel modules, built against each flavor's kernel build tree,
so that one source runs on vanilla and patched alike:

- rigprintk (rig/guest/module/): the test module the scenarios drive;
- prbstress (rig/guest/prbstress/): the ringbuffer stress test of `rig bench`,
  in the bench's own initramfs (rig.artifacts.initramfs). It carries its own copy
  of the flavor's kernel/printk/printk_ringbuffer.c (the ringbuffer's
  functions are not exported), so it is built only where the rig has the
  kernel's source: the vanilla and patched flavors.

A module's cache key holds the kernel's own key: a rebuilt kernel rebuilds the
module, and a changed module rebuilds neither kernel.
"""
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Tuple

from rig import paths
from rig.artifacts import custom
from rig.artifacts.cache import Step, ensure, sha256_file, sha256_tree, toolchain_id
from rig.artifacts.kernel import kernel_artifact, kernel_step
from rig.artifacts.runner import run_logged


@dataclass(frozen=True)
class GuestModule:
    name: str                       # NAME.ko, parameters NAME.* on the command line
    src: Path
    step_prefix: str                # cache step: PREFIX-FLAVOR
    kernel_files: Tuple[str, ...] = ()   # copied from the kernel's source tree into the build
    guest_files: Tuple[Path, ...] = ()   # copied from rig/guest into the build


RIGPRINTK = GuestModule("rigprintk", paths.GUEST_SRC / "module", "module",
                        guest_files=(paths.PROTOCOL_H,))
PRBSTRESS = GuestModule("prbstress", paths.GUEST_SRC / "prbstress", "prbstress",
                        ("kernel/printk/printk_ringbuffer.c",
                         "kernel/printk/printk_ringbuffer.h",
                         "kernel/printk/internal.h"))
# -fmacro-prefix-map: __FILE__ (might_sleep() on the debug profile) says
# main.c, not the build directory, whose length would move the module's
# layout, and with it a deterministic run's interleavings, from one cache
# to another. Part of the key: a changed recipe rebuilds the modules.
MAKE_VARS = ("W=1", "KCFLAGS=-fmacro-prefix-map=SRC/=")
MODULE_SRC = RIGPRINTK.src
MODULE_NAME = f"{RIGPRINTK.name}.ko"


def module_inputs(flavor: str, module: GuestModule = RIGPRINTK) -> dict:
    kernel_key = custom.kernel()["key"] if flavor == custom.CUSTOM else kernel_step(flavor).key
    return {
        "module source": sha256_tree(module.src),
        **{f"guest {p.name}": sha256_file(p) for p in module.guest_files},
        "kernel": kernel_key,       # covers kernel_files: they come from its source
        "toolchain": toolchain_id(),
        "recipe": " ".join(MAKE_VARS),
        "flavor": flavor,
    }


def module_step(flavor: str, module: GuestModule = RIGPRINTK) -> Step:
    return Step(f"{module.step_prefix}-{flavor}", module_inputs(flavor, module))


def _build(flavor: str, module: GuestModule, out: Path) -> dict:
    kernel = kernel_artifact(flavor)       # says which make target to run if missing
    src = out / "src"
    shutil.copytree(module.src, src)
    for name in module.kernel_files:
        shutil.copy2(kernel.path("source_dir") / name, src / Path(name).name)
    for path in module.guest_files:
        shutil.copy2(path, src / path.name)
    run_logged(f"{module.step_prefix}-{flavor}",
               ["make", "-C", str(kernel.path("build_dir")), f"M={src}",
                *(v.replace("SRC", str(src)) for v in MAKE_VARS), "modules"],
               out / "build.log")
    return {"module": f"src/{module.name}.ko",
            "kernel_release": kernel["outputs"]["kernel_release"]}


def build_module(flavor: str, force: bool = False, module: GuestModule = RIGPRINTK) -> dict:
    step = module_step(flavor, module)
    manifest = ensure(step, lambda out: _build(flavor, module, out), force=force)
    manifest["dir"] = str(step.dir)
    return manifest
