"""A kernel change shows in the golden transcripts: the patched kernel with
one message changed (rig/tests/data/golden-message-change.patch, built like
a mutant: cached after the first build) fails the golden
comparison of the panic scenario with a report that names that message
(among the timing changes any kernel change brings), and `rig golden`
accepts it, after which the comparison passes. The changed kernel is an
incremental build from the patched flavor's."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rig import paths
from rig.artifacts.cache import MANIFEST

pytestmark = [pytest.mark.builds, pytest.mark.boots]

PATCH = Path(__file__).parent / "data" / "golden-message-change.patch"
TEST = "scenarios/test_s10_panic_in_nmi.py::test_s10_panic_from_nmi_reaches_the_wire_complete"
GOLDEN = Path("test_s10_panic_in_nmi/test_s10_panic_from_nmi_reaches_the_wire_complete"
              ".patched.txt")


def rig(*args, env):
    return subprocess.run([sys.executable, "-m", *args], cwd=paths.REPO, env=env,
                          capture_output=True, text=True)


def started_from(mutant: str):
    """What the patched kernel with mutant started from (rig.artifacts.kbuild_reuse);
    None for a build made before builds recorded it."""
    for manifest in (paths.cache_root() / "kernel-patched").glob(f"*/{MANIFEST}"):
        outputs = json.loads(manifest.read_text())["outputs"]
        if f"mutants/{mutant}" in outputs["patches"]:
            return outputs.get("started_from")
    raise AssertionError(f"no patched kernel with {mutant} in {paths.cache_root()}")


def test_a_changed_message_fails_the_golden_check_and_make_golden_accepts_it(tmp_path):
    golden_dir = tmp_path / "golden"
    shutil.copytree(paths.REPO / "golden", golden_dir)
    env = dict(os.environ, RIG_MUTANT=str(PATCH), RIG_GOLDEN_DIR=str(golden_dir),
               RIG_RUNS=str(tmp_path / "runs"))
    build = rig("rig", "build", "kernel", "initramfs", "--flavor", "patched", env=env)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    started = started_from(PATCH.name)
    assert started is None or started.startswith("kernel-patched ") and \
        started.endswith(" (1 file(s) differ)"), \
        f"the changed kernel did not start from the patched flavor's build: {started}"

    check = rig("pytest", "-q", "-p", "no:cacheprovider", "--flavor", "patched", TEST, env=env)
    assert check.returncode == 1, check.stdout[-3000:]
    out = check.stdout
    assert f"differs from its golden file {golden_dir / GOLDEN}" in out, out[-3000:]
    # The changed message is named with both texts. A kernel change also moves
    # virtual time (the decompressor alone runs other instructions), so where
    # the NMI lands and how the CPUs' lines interleave may change too: those
    # differences are listed as well, each on its own line.
    changed = [ln for ln in out.splitlines() if "Kernel Offset" in ln and "changed" in ln]
    assert len(changed) == 1 and "'Kernel Offset: disabled' -> " \
        "'Kernel Offset: disabled (no KASLR)'" in changed[0], out[-3000:]
    assert "-001: Kernel Offset: disabled" in out and \
        "+001: Kernel Offset: disabled (no KASLR)" in out, out[-3000:]

    accept = rig("rig", "golden", "--flavor", "patched", "--", TEST, env=env)
    assert accept.returncode == 0, accept.stdout[-3000:]
    assert f"changed   {Path(golden_dir.name) / GOLDEN} (+" in accept.stdout and \
        "golden: 0 new, 1 changed, 0 unchanged" in accept.stdout, accept.stdout[-3000:]
    assert "Kernel Offset: disabled (no KASLR)" in (golden_dir / GOLDEN).read_text()

    again = rig("pytest", "-q", "-p", "no:cacheprovider", "--flavor", "patched", TEST, env=env)
    assert again.returncode == 0, again.stdout[-3000:]
