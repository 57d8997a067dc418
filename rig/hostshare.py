"""Who may run beside whom on this host.

A real-time boot (no -icount) keeps virtual time with the host's clock, so a
second QEMU on the same cores stretches what the guest sees: a vCPU is
descheduled mid-line, a timer fires late, the kernel warns about calibration.
Such a boot therefore holds the host alone (an exclusive lock); deterministic
boots, whose virtual time counts instructions, share it with each other. The
lock is an flock(2) on one file per machine, so it spans pytest-xdist workers,
`rig` commands and CI jobs alike, and it goes with the process that holds it.

With RIG_HOST_LOCK_LOG=FILE each holder appends a JSON line when it lets go:
what held the lock, how, how long it waited and how long it held it (how a
parallel run's time went, docs/architecture.md, "Parallel runs").
"""
import fcntl
import json
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

LOCK_ENV = "RIG_HOST_LOCK"     # another path, e.g. per host in a shared /tmp
LOG_ENV = "RIG_HOST_LOCK_LOG"


def lock_path() -> Path:
    return Path(os.environ.get(LOCK_ENV) or Path(tempfile.gettempdir()) / "printk-rig-host.lock")


@contextmanager
def hold(alone: bool, what: str = ""):
    """Exclusive for a real-time boot (alone=True), shared for a deterministic
    one; what names the holder in the log."""
    try:
        fd = os.open(lock_path(), os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:             # another user's file: flock needs no write access
        fd = os.open(lock_path(), os.O_RDONLY)
    asked, got = time.monotonic(), None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        got = time.monotonic()
        yield
    finally:
        os.close(fd)
        log = os.environ.get(LOG_ENV)
        if log and got is not None:
            entry = {"what": what, "alone": alone, "pid": os.getpid(), "end": time.time(),
                     "waited_s": round(got - asked, 3),
                     "held_s": round(time.monotonic() - got, 3)}
            with open(log, "a") as f:           # one short write: lines do not mix
                f.write(json.dumps(entry) + "\n")
