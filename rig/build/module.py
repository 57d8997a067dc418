"""The in-guest test module (rig/guest/module/), built against each flavor's
kernel build tree, so that one source runs on vanilla and patched alike.

Its cache key holds the kernel's own key: a rebuilt kernel rebuilds the
module, and a changed module rebuilds neither kernel.
"""
import shutil
from pathlib import Path

from rig import paths
from rig.build import artifacts, custom
from rig.build.cache import Step, ensure, sha256_tree, toolchain_id
from rig.build.kernel import kernel_step
from rig.build.runner import run_logged

MODULE_SRC = paths.GUEST_SRC / "module"
MODULE_NAME = "rigprintk.ko"


def module_inputs(flavor: str) -> dict:
    kernel_key = custom.kernel()["key"] if flavor == custom.CUSTOM else kernel_step(flavor).key
    return {
        "module source": sha256_tree(MODULE_SRC),
        "kernel": kernel_key,
        "toolchain": toolchain_id(),
        "flavor": flavor,
    }


def module_step(flavor: str) -> Step:
    return Step(f"module-{flavor}", module_inputs(flavor))


def _build(flavor: str, out: Path) -> dict:
    kernel = artifacts.kernel(flavor)      # says which make target to run if missing
    src = out / "src"
    shutil.copytree(MODULE_SRC, src)
    run_logged(f"module-{flavor}",
               ["make", "-C", str(kernel.path("build_dir")), f"M={src}", "W=1", "modules"],
               out / "build.log")
    return {"module": f"src/{MODULE_NAME}", "kernel_release": kernel["outputs"]["kernel_release"]}


def build_module(flavor: str, force: bool = False) -> dict:
    step = module_step(flavor)
    manifest = ensure(step, lambda out: _build(flavor, out), force=force)
    manifest["dir"] = str(step.dir)
    return manifest
