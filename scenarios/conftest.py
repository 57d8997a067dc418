"""Fixtures for scenarios: boot a flavor, keep the run directory, name it on
failure; boot with the test module and parse the evidence; and say what a
flavor is expected to lack."""
import pytest

from rig.boot import BootRequest, boot
from rig.evidence import Evidence
from rig.rigprintk import cmdline


@pytest.fixture
def rig_boot(request):
    """Boot with a BootRequest; the run directory goes into the test report."""
    def run(req: BootRequest):
        result = boot(req)
        request.node.user_properties.append(("run_dir", str(result.run_dir)))
        print(f"run directory: {result.run_dir}")
        return result
    return run


@pytest.fixture
def rig_run(rig_boot):
    """Boot flavor with rig-init steps and test module parameters; the run must
    end cleanly (unless expect says otherwise); returns the parsed Evidence."""
    def run(flavor: str, name: str, steps: str, extra: str = "", expect: str = "clean",
            smp: int = 2, uart_props=None, qmp_when=None, baud_model: bool = True,
            deterministic: bool = False, **module) -> Evidence:
        req = BootRequest(flavor=flavor, name=name, smp=smp, uart_props=uart_props or {},
                          qmp_when=qmp_when, baud_model=baud_model,
                          deterministic=deterministic,
                          cmdline=f"rig.steps={steps} {cmdline(scen=name, **module)} {extra}")
        result = rig_boot(req)
        assert result.outcome.cls == expect, (f"{name} on {flavor}: {result.outcome.cls}, "
                                              f"expected {expect}: {result.outcome.detail} "
                                              f"(run directory {result.run_dir})")
        return Evidence.of(result)
    return run


@pytest.fixture
def lacks(request, flavor):
    """lacks("vanilla", "reason"): on that flavor the test must fail (strict xfail),
    because the kernel lacks the seed feature the reason names."""
    def mark(which: str, reason: str):
        if flavor == which:
            request.applymarker(pytest.mark.xfail(strict=True, raises=AssertionError,
                                                  reason=f"{which}: {reason}"))
    return mark
