"""pytest options shared by the rig's unit tests and scenarios: a plugin that
pytest.ini loads with -p, so that the options are known however the command
line is ordered (a conftest.py is found only after the paths are).

It also tells the rig's faults from the kernel's (rig.faults): a test that
failed on a RigFault carries the JUnit property rig_fault (its exit code),
and a session whose every failure is one ends with that code, 2 (the rig
failed) or 3 (incomplete evidence), instead of pytest's 1, which says a
property does not hold."""

import pytest

from rig import faults

from rig import boot_options, paths
from rig.artifacts import custom


def pytest_addoption(parser):
    group = parser.getgroup("printk-rig")
    group.addoption("--flavor", action="append", choices=paths.FLAVORS,
                    help="kernel flavor(s) to run scenarios on (default: both, or none "
                         "with --kernel)")
    boot_options.add_to(group.addoption)
    group.addoption("--profile", choices=paths.PROFILES, default=None,
                    help="kernel profile to run on (default: $RIG_PROFILE, else default): "
                         "default, rt (PREEMPT_RT) or debug (lockdep, atomic-sleep checks, "
                         "latency tracers); docs/profiles.md")
    group.addoption("--smoke-flavor", action="append", choices=paths.FLAVORS, default=[],
                    help="on this flavor run only the smoke: S1 and the golden scenarios "
                         "(the `smoke` and `golden` markers); `make test-profiles "
                         "SMOKE_FLAVORS=vanilla`, which .ci/run uses to fit its budget")
    group.addoption("--kernel-like", choices=paths.FLAVORS, default="patched",
                    help="whose expectations --kernel must meet: patched (every seed "
                         "property, the default) or vanilla (6.12's known gaps xfail)")
    group.addoption("--golden", choices=["check", "update", "off"], default="check",
                    help="golden tests' boots on the icount clock: compare the transcript "
                         "with golden/ (check, the default), rewrite golden/ (update: make "
                         "golden), or neither (off)")
    group.addoption("--keep-runs", action="store_true",
                    help="keep the run directories of passing scenarios too (failing ones "
                         "are always kept)")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """A fleet without -n: one pytest-xdist worker per slot of its hosts."""
    if hasattr(config, "workerinput") or getattr(config.option, "numprocesses", 0) is not None:
        return
    uris = config.getoption("libvirt_uri") or []
    if not config.getoption("hosts") and len(uris) < 2:
        return
    from rig.fleet import hosts
    try:
        fleet = (hosts.read(config.getoption("hosts")) if config.getoption("hosts") else
                 hosts.from_uris(uris, config.getoption("host_slots") or 1))
    except hosts.HostsError as e:
        raise pytest.UsageError(str(e)) from None
    # What xdist's own pytest_cmdline_main makes of -n N, which ran before
    # this one (it was registered later).
    workers = sum(h.slots for h in fleet)
    config.option.numprocesses = workers
    config.option.tx = ["popen"] * workers
    if config.option.dist == "no":
        config.option.dist = "load"


def pytest_configure(config):
    # SIGTERM/SIGHUP unwind like Ctrl-C, so that a build started by a test
    # kills its make process group and a boot its QEMU. Not in an xdist
    # worker: there a handler raising KeyboardInterrupt kills the worker
    # silently at start-up now and then (execnet), and a worker's QEMU dies
    # with it anyway (PR_SET_PDEATHSIG).
    if not hasattr(config, "workerinput"):
        from rig.vm.machine import install_signal_cleanup
        install_signal_cleanup()
    # In the configuration, so that build subprocesses and xdist workers see it too.
    if config.getoption("profile") and not hasattr(config, "workerinput"):
        from rig import config as rig_config
        rig_config.set_fields(profile=config.getoption("profile"))
    from rig.fleet.hosts import HostsError
    try:
        boot_options.apply(config.getoption)
    except HostsError as e:
        raise pytest.UsageError(str(e)) from None


def pytest_generate_tests(metafunc):
    if "flavor" in metafunc.fixturenames:
        chosen = metafunc.config.getoption("flavor")
        if metafunc.config.getoption("kernel"):
            flavors = (chosen or []) + [custom.CUSTOM]
        else:
            flavors = chosen or list(paths.FLAVORS)
        metafunc.parametrize("flavor", flavors)


SMOKE_MARKERS = ("smoke", "golden")


def item_flavor(item):
    """The flavor a test boots: its `flavor` parameter, or the flavor its
    `flavor` marker names (a test written for one flavor)."""
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "flavor" in callspec.params:
        return callspec.params["flavor"]
    marker = item.get_closest_marker("flavor")
    return marker.args[0] if marker else None


def pytest_collection_modifyitems(config, items):
    """--flavor F: deselect the tests written for another flavor (the
    parametrized ones have only F's already); --smoke-flavor F: deselect F's
    tests that are not in the smoke."""
    chosen = set(config.getoption("flavor") or ())
    smoke = set(config.getoption("smoke_flavor"))
    if not chosen and not smoke:
        return
    kept, dropped = [], []
    for item in items:
        flavor = item_flavor(item)
        in_smoke = any(item.get_closest_marker(m) for m in SMOKE_MARKERS)
        out = (flavor is not None and chosen and flavor not in chosen and
               flavor != custom.CUSTOM) or (flavor in smoke and not in_smoke)
        (dropped if out else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_sessionstart(session):
    """The kernel profile the run is on, in the JUnit file as the suite's property."""
    if hasattr(session.config, "workerinput"):
        return
    # pytest's own JUnit writer (record_testsuite_property does not cross
    # pytest-xdist's workers): its stash key, config._xml before pytest 7.
    try:
        from _pytest.junitxml import xml_key
        xml = session.config.stash.get(xml_key, None)
    except ImportError:
        xml = getattr(session.config, "_xml", None)
    if xml is not None:
        xml.add_global_property("profile", paths.profile())
        for name, option in (("flavors", "flavor"), ("smoke_only", "smoke_flavor")):
            if session.config.getoption(option):
                xml.add_global_property(name, ",".join(session.config.getoption(option)))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test that failed on a RigFault: say so in its report (and JUnit)."""
    if call.excinfo is not None and isinstance(call.excinfo.value, faults.RigFault) and \
            not any(name == faults.PROPERTY for name, _ in item.user_properties):
        item.user_properties.append((faults.PROPERTY, call.excinfo.value.exit_code))
    yield


def pytest_runtest_logreport(report):
    """Every failing report (from xdist workers too), with its fault if any:
    a worker that crashed (killed by the OOM killer, say) is the rig's."""
    if report.failed:
        codes = [v for k, v in report.user_properties if k == faults.PROPERTY]
        if not codes and faults.worker_crash(str(report.longrepr)):
            codes = [faults.EXIT_RIG]
        FAILURES.append(codes[0] if codes else faults.EXIT_PROPERTY)


FAILURES: list = []


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput"):
        return
    if exitstatus == pytest.ExitCode.TESTS_FAILED and FAILURES and \
            faults.EXIT_PROPERTY not in FAILURES:
        session.exitstatus = max(FAILURES)
