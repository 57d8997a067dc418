"""Fixtures for scenarios: boot a flavor, keep the run directory, name it on failure."""
import pytest

from rig.boot import BootRequest, boot


@pytest.fixture
def rig_boot(request):
    """Boot with a BootRequest; the run directory goes into the test report."""
    def run(req: BootRequest):
        result = boot(req)
        request.node.user_properties.append(("run_dir", str(result.run_dir)))
        print(f"run directory: {result.run_dir}")
        return result
    return run
