"""pytest options shared by the rig's unit tests and scenarios: a plugin that
pytest.ini loads with -p, so that the options are known however the command
line is ordered (a conftest.py is found only after the paths are)."""

from rig import backend, paths
from rig.build import custom


def pytest_addoption(parser):
    group = parser.getgroup("printk-rig")
    group.addoption("--flavor", action="append", choices=paths.FLAVORS,
                    help="kernel flavor(s) to run scenarios on (default: both, or none "
                         "with --kernel)")
    group.addoption("--kernel", metavar="BZIMAGE",
                    help="also run the scenarios on this kernel image (flavor 'custom'); "
                         "the test module is built against --kernel-build")
    group.addoption("--kernel-build", metavar="DIR",
                    help="build directory of --kernel, with .config and Module.symvers "
                         "(default: the tree above arch/x86/boot/bzImage)")
    group.addoption("--kernel-like", choices=paths.FLAVORS, default="patched",
                    help="whose expectations --kernel must meet: patched (every seed "
                         "property, the default) or vanilla (6.12's known gaps xfail)")
    group.addoption("--deterministic", action="store_true",
                    help="run every boot under -icount (byte-identical evidence run after "
                         "run); the panic and NMI scenarios do so anyway")
    group.addoption("--icount-shift", type=int, metavar="N",
                    help="icount shift of every deterministic boot (default: the "
                         "scenario's, else the rig's default)")
    group.addoption("--golden", choices=["check", "update", "off"], default="check",
                    help="deterministic boots: compare the transcript with golden/ "
                         "(check, the default), rewrite golden/ (update: make golden), "
                         "or neither (off)")
    group.addoption("--backend", choices=backend.BACKENDS, default=None,
                    help="what starts QEMU: direct (the harness, the default) or libvirt "
                         "(libvirtd, from a transient domain; `make libvirtd` starts it)")
    group.addoption("--libvirt-uri", action="append", metavar="URI",
                    help="libvirt URI for --backend libvirt (default qemu:///system); "
                         "repeat it to spread xdist workers over several hosts")
    group.addoption("--snapshot", choices=["on", "off"], default="on",
                    help="start the scenarios' boots from a VM saved at init's snapshot "
                         "point where they allow it (on, the default; docs/architecture.md, "
                         "Snapshot restore), or boot each one (off)")
    group.addoption("--lock-timeout", type=float, metavar="SECONDS",
                    help="a boot that waits longer than this for the host lock fails, naming "
                         "who holds it (default: wait)")
    group.addoption("--keep-runs", action="store_true",
                    help="keep the run directories of passing scenarios too (failing ones "
                         "are always kept)")


def pytest_configure(config):
    # SIGTERM/SIGHUP unwind like Ctrl-C, so that a build started by a test
    # kills its make process group and a boot its QEMU. Not in an xdist
    # worker: there a handler raising KeyboardInterrupt kills the worker
    # silently at start-up now and then (execnet), and a worker's QEMU dies
    # with it anyway (PR_SET_PDEATHSIG).
    if not hasattr(config, "workerinput"):
        from rig.machine import install_signal_cleanup
        install_signal_cleanup()
    # In the environment, so that build subprocesses and xdist workers see it too.
    if config.getoption("backend") or config.getoption("libvirt_uri"):
        backend.choose(config.getoption("backend") or "libvirt",
                       config.getoption("libvirt_uri") or [])
    image = config.getoption("kernel")
    if image:
        custom.use(image, config.getoption("kernel_build"))


def pytest_generate_tests(metafunc):
    if "flavor" in metafunc.fixturenames:
        chosen = metafunc.config.getoption("flavor")
        if metafunc.config.getoption("kernel"):
            flavors = (chosen or []) + [custom.CUSTOM]
        else:
            flavors = chosen or list(paths.FLAVORS)
        metafunc.parametrize("flavor", flavors)
