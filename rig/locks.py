"""Lock files: an exclusive flock(2) on a file, and lock files that go
away when their holder is done.

A lock file that is removed while another process waits on it would let two
processes hold "the" lock at once (one on the removed file, one on a new
file at the same path). So every taker of a lock made by locked() checks,
once it holds the lock, that the path still names the file it locked, and
takes the new one if not; then a holder may remove the file before it lets
go (locked(..., remove=True)), and a sweep may remove a file nobody holds
(remove_if_free).
"""
import fcntl
import os
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def locked(path: Path, remove: bool = False):
    """An exclusive flock(2) on path, created if need be; a lock file this
    user may only read (someone else's cache) is locked read-only. With
    remove, the file goes when its holder lets go (the runtime directory's
    per-volume locks, which would otherwise pile up): so every taker checks,
    once it holds the lock, that path still names the file it locked, and
    takes the new one if not."""
    while True:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except PermissionError:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:   # someone else's cache, never locked: read as is
                yield
                return
        fcntl.flock(fd, fcntl.LOCK_EX)
        if still_names(path, fd):
            break
        os.close(fd)            # removed by its last holder meanwhile
    try:
        yield
    finally:
        if remove:
            path.unlink(missing_ok=True)
        os.close(fd)


def still_names(path: Path, fd: int) -> bool:
    """path is the file open at fd (not removed, nor replaced)."""
    try:
        st, now = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino)


def remove_if_free(path: Path) -> bool:
    """Remove a lock file nobody holds (a sweep of leftovers); True if it went."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    try:
        if still_names(path, fd):
            path.unlink()
            return True
        return False
    finally:
        os.close(fd)


