"""Fixtures for scenarios: boot a flavor, keep the run directory, name it on
failure; boot with the test module and parse the evidence; and say what a
flavor is expected to lack."""
import shutil

import pytest

from rig.boot import BootRequest, boot
from rig.build import custom
from rig.evidence import Evidence
from rig.rigprintk import cmdline


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.rig_call_report = report


@pytest.fixture
def rig_boot(request):
    """Boot with a BootRequest; the run directory goes into the test report.
    A passing test's run directories are removed unless --keep-runs is given;
    a failing (or xfailing) test keeps them."""
    dirs = []

    def run(req: BootRequest):
        result = boot(req)
        dirs.append(result.run_dir)
        request.node.user_properties.append(("run_dir", str(result.run_dir)))
        print(f"run directory: {result.run_dir}")
        return result
    yield run
    report = getattr(request.node, "rig_call_report", None)
    passed = report is not None and report.passed and not hasattr(report, "wasxfail")
    if passed and not request.config.getoption("keep_runs"):
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def rig_run(rig_boot):
    """Boot flavor with rig-init steps and test module parameters; the run must
    end cleanly (unless expect says otherwise); returns the parsed Evidence."""
    def run(flavor: str, name: str, steps: str, extra: str = "", expect: str = "clean",
            smp: int = 2, uart_props=None, qmp_when=None, baud_model: bool = True,
            deterministic: bool = False, icount_shift: int = 0, warm_reset: bool = False,
            **module) -> Evidence:
        req = BootRequest(flavor=flavor, name=name, smp=smp, uart_props=uart_props or {},
                          qmp_when=qmp_when, baud_model=baud_model,
                          deterministic=deterministic, icount_shift=icount_shift,
                          warm_reset=warm_reset,
                          cmdline=f"rig.steps={steps} {cmdline(scen=name, **module)} {extra}")
        result = rig_boot(req)
        assert result.outcome.cls == expect, (f"{name} on {flavor}: {result.outcome.cls}, "
                                              f"expected {expect}: {result.outcome.detail} "
                                              f"(run directory {result.run_dir})")
        return Evidence.of(result)
    return run


@pytest.fixture
def like(request, flavor) -> str:
    """The flavor whose expectations apply: a --kernel is judged like --kernel-like."""
    return request.config.getoption("kernel_like") if flavor == custom.CUSTOM else flavor


@pytest.fixture
def lacks(request, like):
    """lacks("vanilla", "reason"): on that flavor (or a --kernel judged like it) the
    test must fail (strict xfail), because the kernel lacks the seed feature the
    reason names."""
    def mark(which: str, reason: str):
        if like == which:
            request.applymarker(pytest.mark.xfail(strict=True, raises=AssertionError,
                                                  reason=f"{which}: {reason}"))
    return mark
