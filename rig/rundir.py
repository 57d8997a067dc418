"""Run directories and the rig's private runtime directory: only their user
gets in, whatever the umask, and a boot does not start without room for its
evidence.

A run directory is 0700 and QEMU writes into it with umask 177, so another
user can neither read the evidence nor reach the QMP socket in it (QMP runs
any command: `migrate exec:...`). Sockets whose path would be too long for a
run directory, and the host lock, live in the user's private runtime
directory: /run/printk-rig for root, $XDG_RUNTIME_DIR/printk-rig otherwise,
created 0700 and refused if it is a symlink, someone else's or open to others.
"""
import os
import stat
import tempfile
from pathlib import Path

PRIVATE_MODE = 0o700
FILE_MODE = 0o600
QEMU_UMASK = 0o177        # its files and unix sockets 0600
# What a boot needs free on the run directory's filesystem: the largest
# scenario runs write about 13 MB (S22's register logs), the bench more.
DEFAULT_MIN_FREE_MB = 64


class RunDirError(RuntimeError):
    """The run directory (or the runtime directory) cannot hold a run; says why."""


def make_private(path: Path) -> Path:
    """Create path (and its parents) and make it 0700."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, PRIVATE_MODE)
    return path


def runtime_dir() -> Path:
    """The user's private directory for sockets and the host lock."""
    if os.geteuid() == 0:
        base = Path("/run")
    else:
        xdg = os.environ.get("XDG_RUNTIME_DIR")
        base = Path(xdg) if xdg else Path(tempfile.gettempdir())
    name = "printk-rig" if base != Path(tempfile.gettempdir()) else f"printk-rig-{os.getuid()}"
    path = base / name
    try:
        path.mkdir(mode=PRIVATE_MODE)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise RunDirError(f"{path}: the rig's runtime directory must be a directory of "
                          f"user {os.geteuid()} that only it can enter (mode 0700, not a "
                          f"symlink); it is mode {stat.filemode(st.st_mode)} of user "
                          f"{st.st_uid}: remove it and run again")
    return path


def free_bytes(path: Path) -> int:
    """Free bytes (for this user) on the filesystem path is, or would be, on."""
    path = Path(path).absolute()
    while not path.exists():
        path = path.parent
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def human(n: int) -> str:
    for unit, size in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def room(path: Path) -> str:
    """'N MB free on its filesystem', for messages about path."""
    return f"{human(free_bytes(path))} free on its filesystem"


def check_room(path: Path, min_free_mb: int) -> None:
    if free_bytes(path) < min_free_mb * 2**20:
        raise RunDirError(f"{path}: {room(path)}; a boot needs at "
                          f"least {min_free_mb} MiB for its evidence (console, register "
                          f"logs, side channel): free some space or put the runs elsewhere "
                          f"(RIG_RUNS=DIR)")


def write_text(path: Path, text: str) -> None:
    """Replace path's content whole or not at all: a full disk leaves the old
    file (or none), never a cut one; the error names the file and the room."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
        with open(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise RunDirError(f"cannot write {path} ({len(text.encode())} bytes): {e.strerror}; "
                          f"{room(path)}") from None
