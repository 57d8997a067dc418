"""The rig's own failures, told apart from the kernel's.

Every rig command exits with one of four codes, so that a CI job never reads
the rig's trouble as a kernel regression:

    0  every property holds
    1  a property does not hold (the kernel's verdict)
    2  bad input, or the rig or its host failed: named, no verdict
    3  the run's evidence is incomplete: no verdict

A RigFault is an error of the second kind (3 for EvidenceIncomplete); each
module's error class derives from it, and its message names what failed and
what to do. Anything else that escapes a command is the rig's own bug: the
command says so in one line, keeps the traceback in a file and exits 2
(rig.cli). The pytest plugin marks a test that failed on a RigFault, and a
session whose every failure is one ends with 2 or 3 instead of pytest's 1.
"""
import os
import tempfile
import time
import traceback
from typing import Tuple

EXIT_OK, EXIT_PROPERTY, EXIT_RIG, EXIT_INCOMPLETE = 0, 1, 2, 3
# The JUnit property a test failed on the rig's own fault carries: its exit code.
PROPERTY = "rig_fault"


class RigFault(Exception):
    """Bad input, or a failure of the rig or of its host: not a verdict on
    the kernel. The message names what failed."""
    exit_code = EXIT_RIG


class EvidenceIncomplete(RigFault):
    """A run's evidence is damaged or cut short: no verdict."""
    exit_code = EXIT_INCOMPLETE


def worker_crash(message: str) -> bool:
    """pytest-xdist's report of a worker that died under a test (no test
    result of the kernel's: the harness process is gone)."""
    return message.startswith("worker '") and " crashed while running " in message


def internal_error(exc: BaseException) -> Tuple[str, str]:
    """(one line for the user, the file holding the traceback) for an
    exception that is none of the rig's named failures."""
    fd, path = tempfile.mkstemp(prefix=f"rig-error-{time.strftime('%Y%m%d-%H%M%S')}-",
                                suffix=".txt")
    with os.fdopen(fd, "w") as f:
        f.write("".join(traceback.format_exception(exc)))
    first = str(exc).splitlines()[0] if str(exc) else ""
    return (f"the rig failed ({type(exc).__name__}{': ' + first if first else ''}); this is "
            f"a fault of the rig, not a verdict on the kernel (traceback in {path})", path)


def exit_code_of(pytest_status: int) -> int:
    """A pytest run's exit status as a rig command's: tests failed (1) is
    a property; 2 and 3 are the plugin's (a rig fault, incomplete
    evidence); interrupted, usage errors and no tests are the rig's."""
    return pytest_status if pytest_status in (0, 1, 2, 3) else EXIT_RIG
