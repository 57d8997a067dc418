"""Who may run beside whom on this host.

A boot on the host's clock (no -icount) keeps virtual time with the host's,
so a second QEMU on the same cores stretches what the guest sees: a vCPU is
descheduled mid-line, a timer fires late, the kernel warns about calibration.
Such a boot therefore holds the host alone (an exclusive lock); boots on the
icount clock, whose virtual time counts instructions, share it with each
other (alone_on). The
lock is an flock(2) on one file per user, so it spans pytest-xdist workers,
`rig` commands and CI jobs alike, and it goes with the process that holds it.

The file is in the user's private runtime directory (rig.rundir), opened
without following symlinks and mode 0600: nobody else can plant it, take it
or hold it. A boot that waits for it says, every WAIT_REPORT_S, who holds it
(pid and command line, from /proc/locks) and for how long it has waited; a
lock timeout ends the wait with HostLockTimeout.

With RIG_HOST_LOCK_LOG=FILE each holder appends a JSON line when it lets go:
what held the lock, how, how long it waited and how long it held it (how a
parallel run's time went, docs/architecture.md, "Parallel runs").
"""
import fcntl
import json
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import List, Optional

from rig import config, rundir
from rig.locks import still_names
from rig.vm.qemu_argv import ICOUNT_CLOCK
from rig.faults import RigFault

LOCK_NAME = "host.lock"
POLL_S = 0.2
WAIT_REPORT_S = 10.0


class HostLockTimeout(RigFault, TimeoutError):
    """The host lock was not free within the lock timeout; names the holders."""


def lock_path() -> Path:
    # Another path, e.g. one per host in a shared /tmp, if configured.
    return Path(config.current().host_lock or rundir.runtime_dir() / LOCK_NAME)


def open_lock(path: Path) -> int:
    """The lock file, created 0600 if need be, never through a symlink."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                       rundir.FILE_MODE)
    except OSError as e:
        raise rundir.RunDirError(f"host lock {path}: {e.strerror} (a symlink there is "
                                 "refused: remove it)") from None


def holders(fd: int) -> List[str]:
    """The processes that hold a lock on fd's file: 'pid N (command line)'."""
    st = os.fstat(fd)
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    found = []
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        fields = line.split()
        if "->" in fields:          # a waiter, not a holder
            continue
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == inode:
            pid = fields[4]
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                what = cmd.decode("utf-8", "replace").strip()[:160]
            except OSError:
                what = "?"
            found.append(f"pid {pid} ({what})")
    return found


def held_by(fd: int) -> str:
    return ", ".join(holders(fd)) or "a process this user cannot see"


def wait_for(fd: int, mode: int, path: Path, timeout_s: Optional[float], what: str,
             start: Optional[float] = None) -> None:
    """flock(fd, mode), telling who holds the lock while it waits; the wait
    counts from start (monotonic seconds; now by default)."""
    start = start if start is not None else time.monotonic()
    last_report = time.monotonic()
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        now = time.monotonic()
        if timeout_s is not None and now - start >= timeout_s:
            raise HostLockTimeout(
                f"host lock {path} not free after {timeout_s:g} s ({what} needs it "
                f"{'alone' if mode == fcntl.LOCK_EX else 'shared'}); held by {held_by(fd)}")
        if now - last_report >= WAIT_REPORT_S:
            last_report = now
            print(f"[host lock] {what} has waited {now - start:.0f} s for {path}, held by "
                  f"{held_by(fd)}", file=sys.stderr, flush=True)
        time.sleep(POLL_S)


def alone_on(clock: str) -> bool:
    """Whether a boot on this clock must have the host to itself."""
    return clock != ICOUNT_CLOCK


@contextmanager
def hold(alone: bool, what: str = "", timeout_s: Optional[float] = None,
         path: Optional[Path] = None):
    """Exclusive for a boot on the host's clock (alone=True), shared for one
    on the icount clock; what names the holder in the log and in wait reports.
    path: another host's lock (a remote host's, rig.fleet.hosts)."""
    path = path or lock_path()
    asked, got = time.monotonic(), None
    while True:
        fd = open_lock(path)
        try:
            wait_for(fd, fcntl.LOCK_EX if alone else fcntl.LOCK_SH, path, timeout_s, what,
                     start=asked)
        except BaseException:
            os.close(fd)
            raise
        if still_names(path, fd):
            break
        os.close(fd)        # a sweep removed the file meanwhile: lock the one there now
    try:
        got = time.monotonic()
        yield
    finally:
        os.close(fd)
        log = config.current().host_lock_log
        if log and got is not None:
            entry = {"what": what, "alone": alone, "pid": os.getpid(), "end": time.time(),
                     "waited_s": round(got - asked, 3),
                     "held_s": round(time.monotonic() - got, 3)}
            with open(log, "a") as f:           # one short write: lines do not mix
                f.write(json.dumps(entry) + "\n")
