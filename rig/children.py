"""Child processes that never outlive the rig.

A harness killed with SIGKILL runs no finally block, so each long-lived
child is tied to it by the kernel instead: PR_SET_PDEATHSIG sends the child
a signal when the harness goes. QEMU gets SIGKILL (rig.vm.machine). A build
command runs under rig/guardian.py, the leader of its own session, which on
that signal kills every process of the session (make and its compilers). A
child rig or pytest gets SIGTERM, which it turns into its own cleanup
(rig.vm.machine.install_signal_cleanup).
"""
import ctypes
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Callable, List, Sequence

PR_SET_PDEATHSIG = 1
GUARDIAN = Path(__file__).with_name("guardian.py")


def set_death_signal(sig: int, parent: int) -> None:
    """In a forked child before exec: get sig when the parent dies, and go
    at once if it died already (between the fork and this call)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None]:
    """A preexec_fn: the child gets sig when this process dies."""
    parent = os.getpid()
    return lambda: set_death_signal(sig, parent)


def guarded(argv: Sequence[str]) -> List[str]:
    """argv run under the guardian (start it with popen_guarded)."""
    return [sys.executable, str(GUARDIAN), "--", *argv]


def popen_guarded(argv: Sequence[str], **kwargs) -> subprocess.Popen:
    """A build command in a session of its own that dies, whole, with the
    rig; killpg(proc.pid) also ends it."""
    return subprocess.Popen(guarded(argv), start_new_session=True,
                            preexec_fn=die_with_parent(signal.SIGTERM), **kwargs)


def run_tied(argv: Sequence[str], **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run for a child rig or pytest: it gets SIGTERM when this
    process dies."""
    return subprocess.run(list(argv), preexec_fn=die_with_parent(signal.SIGTERM), **kwargs)


def popen_tied(argv: Sequence[str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen(list(argv), preexec_fn=die_with_parent(signal.SIGTERM), **kwargs)
