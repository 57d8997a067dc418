"""pytest options shared by the rig's unit tests and scenarios."""
from rig import paths


def pytest_addoption(parser):
    group = parser.getgroup("printk-rig")
    group.addoption("--flavor", action="append", choices=paths.FLAVORS,
                    help="kernel flavor(s) to run scenarios on (default: both)")
    group.addoption("--keep-runs", action="store_true",
                    help="keep the run directories of passing scenarios too (failing ones "
                         "are always kept)")


def pytest_generate_tests(metafunc):
    if "flavor" in metafunc.fixturenames:
        flavors = metafunc.config.getoption("flavor") or list(paths.FLAVORS)
        metafunc.parametrize("flavor", flavors)
