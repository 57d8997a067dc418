"""S1 boot: boots to init; every console line parses; no WARN/BUG/lockdep splat;
/dev/kmsg seq contiguous from 0; exit class is clean.

Both flavors must show all of it: S1 is what every other scenario stands on.
"""
import pytest

from rig import paths
from rig.artifacts import custom
from rig.boot import BootRequest
from rig.evidence.boot import Evidence
from rig.evidence.properties import boot_checks

pytestmark = pytest.mark.boots


@pytest.mark.smoke
def test_s1_boot(flavor, rig_boot):
    result = rig_boot(BootRequest(flavor=flavor, name="S1-boot"))
    # Lenient: a damaged side channel is a failed property, not an error.
    checks = boot_checks(Evidence.of(result, lenient=True))
    failed = [c for c in checks if not c.ok]
    assert not failed, (f"boot: {'; '.join(c.prop for c in failed)} on {flavor} "
                        f"({result.summary['kernel']['release']}), run directory "
                        f"{result.run_dir}:\n" + "\n".join(str(c) for c in failed))
    if flavor != custom.CUSTOM:
        # The flavor and the profile (docs/profiles.md) are in the release.
        kernel = paths.kernel_name(flavor, result.summary["profile"])
        assert result.summary["kernel"]["release"].endswith(f"-rig-{kernel}"), (
            f"boot: the kernel's release {result.summary['kernel']['release']} is not "
            f"the {kernel} kernel's (run directory {result.run_dir})")
