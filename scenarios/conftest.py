"""Fixtures for scenarios: boot a flavor, keep the run directory, name it on
failure; boot with the test module and parse the evidence; and say what a
flavor is expected to lack."""
import dataclasses
import json
import shutil
import time
from collections import Counter
from dataclasses import replace
from typing import Optional

import pytest

from rig import boot_options, faults, paths
from rig.artifacts import built as artifacts, custom
from rig.artifacts.runner import BuildError
from rig.boot import BootRequest, BootResult, boot
from rig.evidence import golden, properties
from rig.evidence.boot import Evidence
from rig.evidence.properties import assert_console_stretches, assert_ousted_writer_keeps_off
from rig.rigprintk import cmdline
from rig.rundir import RunDir
from rig.vm.qemu_argv import HOST_CLOCK, ICOUNT_CLOCK

GOLDEN_CHANGES = pytest.StashKey[list]()


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
    a failing (or xfailing) test keeps them. A run that other tests judge too
    (SHARED_RUNS) is removed at the session's end if every one passed."""
    dirs, judged = [], []           # the runs this test made; every run it judged
    shared = request.config.stash.setdefault(SHARED_RUNS, {})

    def run(req: BootRequest, reuse: Optional[BootResult] = None):
        """Boot req; or, for reuse, the run an identical request of another
        test made (SHARED_RUNS), judged as this test's own."""
        if reuse is not None:
            result = reuse
            request.node.user_properties.append(("run_shared", str(result.run_dir)))
        else:
            if req.lock_timeout_s is None:
                req = replace(req, lock_timeout_s=request.config.getoption("lock_timeout"))
            result = boot(req)
            add_times(request.node, result.summary.get("time_s", {}))
            rerun = result.summary.get("rerun_of")
            if rerun:
                request.node.user_properties.append(
                    ("rerun_elsewhere", f"{rerun['error']}; ran again on host "
                                        f"{result.summary.get('host')}"))
            dirs.append(result.run_dir)
        judged.append(result.run_dir)
        request.node.user_properties.append(("run_dir", str(result.run_dir)))
        print(f"run directory: {result.run_dir}" + (" (shared)" if reuse else ""))
        if result.outcome.cls == "rig-error":
            # Not an AssertionError: no verdict on the kernel, not even a strict xfail's.
            request.node.user_properties.append((faults.PROPERTY, faults.EXIT_INCOMPLETE))
            pytest.fail(f"the rig's evidence of this run is incomplete, no verdict: "
                        f"{result.outcome.detail} (run directory {result.run_dir})",
                        pytrace=False)
        if req.clock == ICOUNT_CLOCK:
            compare_golden(request, result, len(judged))
        fail_on_lock_report(result)
        return result
    yield run
    for phase, seconds in getattr(request.node, "rig_times", Counter()).items():
        request.node.user_properties.append((f"time_{phase}_s", round(seconds, 3)))
    report = getattr(request.node, "rig_call_report", None)
    passed = report is not None and report.passed and not hasattr(report, "wasxfail")
    for d in dirs:
        if d in shared:
            continue        # others judge it too: removed at the session's end
        if passed and not request.config.getoption("keep_runs"):
            shutil.rmtree(d, ignore_errors=True)
    request.node.rig_passed = passed


def fail_on_lock_report(result: BootResult) -> None:
    """A property of every run on every profile: no lockdep, atomic-context
    or RCU report. Not an AssertionError: a strict xfail of the scenario's
    own property must not swallow it."""
    check = properties.no_lock_report(properties.run_console_lines(result),
                                      f"(run directory {result.run_dir})")
    if not check.ok:
        pytest.fail(check.message, pytrace=False)


def add_times(node, times) -> None:
    """Add a boot's time split (rig.boot.time_split) to the test's: the
    test's JUnit properties time_PHASE_s, which rig bench reads."""
    if not hasattr(node, "rig_times"):
        node.rig_times = Counter()
    node.rig_times.update(times)


def compare_golden(request, result, boot_no: int) -> None:
    """A boot on the icount clock of a `golden` test is compared with its
    golden transcript (--golden=check) or recorded (--golden=update). Not with
    --icount-shift (other timing, other transcript), nor for a --kernel, nor
    for a boot that did not start from a snapshot (--snapshot off, the
    libvirt backend): the golden files are those of restored runs, and a
    booted run takes other turns between the vCPUs after init's snapshot
    point (docs/architecture.md, "Snapshot restore")."""
    config, node = request.config, request.node
    mode = config.getoption("golden")
    if (mode == "off" or node.get_closest_marker("golden") is None
            or config.getoption("icount_shift") is not None
            or result.summary["flavor"] not in paths.FLAVORS):
        return
    if not result.summary.get("snapshot"):
        node.user_properties.append(("golden", "not compared: booted, not restored"))
        return
    params = getattr(getattr(node, "callspec", None), "params", {})
    kernel = paths.kernel_name(result.summary["flavor"],
                               result.summary.get("profile") or paths.DEFAULT_PROFILE)
    path = golden.file_name(node.fspath.basename, node.originalname, params, kernel, boot_no)
    lines = golden.normalize(result.console)
    normalized = result.run.write_text(RunDir.GOLDEN_TRANSCRIPT, "\n".join(lines) + "\n")
    head = golden.header(node.nodeid, boot_no, result.summary)
    if mode == "update":
        config.stash.setdefault(GOLDEN_CHANGES, []).append(golden.update(path, lines, head))
        return
    problem = golden.mismatch(path, lines, normalized, head)
    if problem:
        # Not an AssertionError: a strict xfail on vanilla must not swallow it.
        pytest.fail(f"{problem}\n(run directory {result.run_dir})", pytrace=False)


def pytest_terminal_summary(terminalreporter, config):
    changes = config.stash.get(GOLDEN_CHANGES, [])
    if not changes:
        return
    tr = terminalreporter
    counts = {s: sum(c.status == s for c in changes) for s in ("new", "changed", "unchanged")}
    tr.section("golden transcripts")
    for c in changes:
        if c.status != "unchanged":
            rel = c.path.relative_to(golden.golden_root().parent)
            tr.write_line(f"{c.status:<9} {rel} (+{c.added} -{c.removed} lines)")
    tr.write_line(f"golden: {counts['new']} new, {counts['changed']} changed, "
                  f"{counts['unchanged']} unchanged; review with `git diff golden/`")


@pytest.fixture
def rig_run(rig_boot, request):
    """Boot flavor with rig-init steps and test module parameters; the run must
    end cleanly (unless expect says otherwise) and keep the properties of
    every run; returns the parsed Evidence."""
    def run(flavor: str, name: str, steps: str, extra: str = "", expect: str = "clean",
            smp: int = 2, uart_props=None, qmp_when=None, baud_model: bool = True,
            clock: Optional[str] = None, icount_shift: Optional[int] = None,
            warm_reset: bool = False, panic_hold: bool = False, second_uart: bool = False,
            **module) -> Evidence:
        clock = clock_of(request, clock)
        req = BootRequest(flavor=flavor, name=name, smp=smp, uart_props=uart_props or {},
                          qmp_when=qmp_when, baud_model=baud_model,
                          clock=clock,
                          icount_shift=boot_options.icount_shift(request.config.getoption,
                                                                 icount_shift),
                          warm_reset=warm_reset, panic_hold=panic_hold, second_uart=second_uart,
                          snapshot=request.config.getoption("snapshot") == "on",
                          cmdline=f"rig.steps={steps} {cmdline(scen=name, **module)} {extra}")
        runs = request.config.stash.setdefault(SHARED_EVIDENCE, {})
        key = shared_key(req, expect)
        if key is not None and key in runs:
            ev = runs[key]
            request.config.stash[SHARED_RUNS][ev.result.run_dir].append(request.node)
            rig_boot(req, reuse=ev.result)
        else:
            result = rig_boot(req)
            assert result.outcome.cls == expect, (
                f"{name} on {flavor}: {result.outcome.cls}, expected {expect}: "
                f"{result.outcome.detail} (run directory {result.run_dir})")
            parsing = time.monotonic()
            ev = Evidence.of(result)
            add_times(request.node, {"parse": time.monotonic() - parsing})
            if key is not None:
                runs[key] = ev
                request.config.stash[SHARED_RUNS][result.run_dir] = [request.node]
        # A property of every run: nobody touches the UART while another
        # CPU's write holds it (S22 builds the takeovers that show it).
        assert_ousted_writer_keeps_off(ev, expect_takeover=False)
        # And on a kernel with the latency tracer (the debug profile): no
        # long interrupts-off stretch in console code, anywhere in the run.
        assert_console_stretches(ev)
        return ev
    return run


# Runs on the icount clock are deterministic: an identical request gives
# byte-identical evidence, so a test whose request another test of this
# worker made already judges that run instead of booting it again (S4 and
# S5, S23's and S24's two tests). rig_run keeps both: run directory -> the
# tests that judged it, and request -> the run's Evidence.
SHARED_RUNS = pytest.StashKey[dict]()
SHARED_EVIDENCE = pytest.StashKey[dict]()


def shared_key(req: BootRequest, expect: str) -> Optional[str]:
    """What makes two requests the same run; None for a run on the host's
    clock, which is a sample of its own."""
    if req.clock != ICOUNT_CLOCK:
        return None
    return json.dumps([dataclasses.asdict(req), expect], sort_keys=True, default=str)


def pytest_sessionfinish(session):
    """Remove the shared runs whose every judge passed (unless --keep-runs)."""
    if session.config.getoption("keep_runs", False):
        return
    for run_dir, judges in session.config.stash.get(SHARED_RUNS, {}).items():
        if all(getattr(node, "rig_passed", False) for node in judges):
            shutil.rmtree(run_dir, ignore_errors=True)


def clock_of(request, clock: Optional[str]) -> str:
    """A boot's clock: --clock if given; else the one the scenario asks for;
    else icount for a test with golden transcripts (the `golden` marker: the
    panic and NMI scenarios), the host's for the others."""
    forced = request.config.getoption("clock")
    if forced:
        return forced
    if clock:
        return clock
    return ICOUNT_CLOCK if request.node.get_closest_marker("golden") else HOST_CLOCK


@pytest.fixture
def like(request, flavor) -> str:
    """The flavor whose expectations apply: a --kernel is judged like --kernel-like."""
    return request.config.getoption("kernel_like") if flavor == custom.CUSTOM else flavor


def on_profile(which: str, profiles: Optional[tuple]) -> Optional[str]:
    """Who an expectation is about: which, or "which on PROFILE" when it is
    limited to some profiles; None when this run's profile is not one of them."""
    if profiles is None:
        return which
    profile = paths.profile()
    return f"{which} on {profile}" if profile in profiles else None


@pytest.fixture
def lacks(request, like):
    """lacks("vanilla", "reason"): on that flavor (or a --kernel judged like it) the
    test must fail (strict xfail), because the kernel lacks the seed feature the
    reason names. profiles=(...): only on those kernel profiles (a vanilla
    PREEMPT_RT kernel prints legacy consoles from a thread, as the seed
    does, and lacks other things instead)."""
    def mark(which: str, reason: str, profiles: Optional[tuple] = None):
        who = on_profile(which, profiles)
        if like == which and who is not None:
            request.applymarker(pytest.mark.xfail(strict=True, raises=AssertionError,
                                                  reason=f"{who}: {reason}"))
    return mark


@pytest.fixture
def cannot_judge(like):
    """cannot_judge("vanilla", ("debug",), "reason"): on that flavor and those
    profiles the scenario shows nothing either way (the run does not reach
    the case the property is about): skipped, the reason naming both."""
    def skip(which: str, profiles: tuple, reason: str):
        who = on_profile(which, profiles)
        if like == which and who is not None:
            pytest.skip(f"{who}: {reason}")
    return skip


@pytest.fixture
def needs_config(flavor):
    """needs_config("CONFIG_X", why): the scenario needs the option in the
    kernel it boots; a kernel without it fails the test before the boot,
    naming the option and the .config."""
    def need(option: str, why: str):
        try:
            custom.require_option(artifacts.kernel(flavor).path("build_dir"), option, why)
        except BuildError as e:
            pytest.fail(str(e), pytrace=False)
    return need
