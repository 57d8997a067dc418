"""Run directories and the rig's private runtime directory.

A run directory holds one boot's evidence and records; RunDir owns its
file names and reads and writes them, and BootResult is what a boot leaves
there. Only their user gets in, whatever the umask, and a boot does not
start without room for its evidence.

A run directory is 0700 and QEMU writes into it with umask 177, so another
user can neither read the evidence nor reach the QMP socket in it (QMP runs
any command: `migrate exec:...`). Sockets whose path would be too long for a
run directory, and the host lock, live in the user's private runtime
directory: /run/printk-rig for root, $XDG_RUNTIME_DIR/printk-rig otherwise,
created 0700 and refused if it is a symlink, someone else's or open to others.
"""
import json
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from rig import config, locks
from rig.vm import outcome as outcome_mod
from rig.faults import RigFault

PRIVATE_MODE = 0o700
FILE_MODE = 0o600
QEMU_UMASK = 0o177        # its files and unix sockets 0600
# What a boot needs free on the run directory's filesystem: the largest
# scenario runs write about 13 MB (S22's register logs), the bench more.
DEFAULT_MIN_FREE_MB = 64


class RunDirError(RigFault, RuntimeError):
    """The run directory (or the runtime directory) cannot hold a run; says why."""


def make_private(path: Path) -> Path:
    """Create path (and its parents) and make it 0700."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, PRIVATE_MODE)
    return path


# Files of the runtime directory a run leaves behind: a remote volume's and
# a remote host's locks (rig.vm.remote_storage, rig.vm.machine_remote: one
# per volume and host, so they pile up) and, when it was killed, a long run
# directory's sockets (rig.vm.qemu_argv.MachineConfig.socket), or the
# libvirt backend's links to them.
VOLUME_LOCK_PREFIX = "volume-"
HOST_LOCK_PREFIX = "host-"        # a remote host's lock (rig.vm.machine_remote)
_swept = set()


def runtime_dir() -> Path:
    """The user's private directory for sockets and the host lock; swept of
    what killed runs left there, once per process."""
    path = _runtime_dir()
    if path not in _swept:
        _swept.add(path)
        sweep(path)
    return path


def bound_sockets() -> set:
    """Paths of the unix sockets some process has bound (/proc/net/unix)."""
    try:
        lines = Path("/proc/net/unix").read_text().splitlines()[1:]
    except OSError:
        return set()
    return {ln.split(None, 7)[7] for ln in lines if len(ln.split(None, 7)) == 8}


def sweep(path: Path) -> list:
    """Remove from the runtime directory what runs left: a socket nobody has
    bound, a link into a directory that is gone (a libvirt stage), a remote
    volume's or host's lock nobody holds. Returns what went."""
    gone, bound = [], None
    for entry in sorted(path.iterdir()):
        try:
            st = os.lstat(entry)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            # A link to a socket QEMU has yet to make dangles too: only one
            # whose directory (a libvirt stage) is gone is left over.
            try:
                target = Path(os.readlink(entry))
            except OSError:         # another process's sweep took it
                continue
            if not target.parent.exists():
                entry.unlink(missing_ok=True)
                gone.append(entry.name)
        elif stat.S_ISSOCK(st.st_mode):
            bound = bound_sockets() if bound is None else bound
            if str(entry) not in bound:
                entry.unlink(missing_ok=True)
                gone.append(entry.name)
        elif entry.name.startswith((VOLUME_LOCK_PREFIX, HOST_LOCK_PREFIX)) and \
                locks.remove_if_free(entry):
            gone.append(entry.name)
    return gone


def _runtime_dir() -> Path:
    if os.geteuid() == 0:
        base = Path("/run")
    else:
        xdg = config.user_runtime_dir()
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
    """Run directories can go under path: its name is one QEMU's options
    can carry, and its filesystem has min_free_mb free."""
    if "," in str(path):
        raise RunDirError(f"{path}: a comma in the runs directory's path would end a QEMU "
                          f"option in the middle of a file name (QEMU separates options with "
                          f"','); put the runs elsewhere (RIG_RUNS=DIR)")
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


def copy_in(src: Path, dst: Path) -> None:
    """A copy of src that is the run directory's: mode 0600 whatever the
    umask and src's mode, never written through a symlink at dst."""
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    with open(fd, "wb") as out, open(src, "rb") as f:
        os.fchmod(out.fileno(), FILE_MODE)
        shutil.copyfileobj(f, out, 1 << 20)


@dataclass(frozen=True)
class RunDir:
    """One boot's directory and the files in it. QEMU writes the evidence
    (the console transcript, the UART register logs, the side channel); the
    harness writes the records (what it ran, how it ended, the bundle)."""
    path: Path

    # The evidence, byte for byte as the guest sent it.
    CONSOLE = "console.log"          # ttyS0's transcript
    UART = "uart.log"                # rig-serial's register log of ttyS0
    SIDE = "side.bin"                # rig-init's side channel (ttyS1)
    CONSOLE2 = "console2.log"        # the second console UART's transcript
    UART2 = "uart2.log"              # and its register log
    EVIDENCE = (CONSOLE, UART, SIDE)
    SECOND_CONSOLE_EVIDENCE = (CONSOLE2, UART2)
    # The records of the run.
    ARGV = "argv.json"               # QEMU's command line
    CMDLINE = "cmdline.txt"          # the kernel's
    QEMU_STDERR = "qemu.stderr"
    QEMU_PID = "qemu.pid"
    QMP_EVENTS = "qmp-events.jsonl"
    VCPU_STACKS = "vcpu-stacks.txt"  # where each vCPU was when the guest hung
    SNAPSHOT_ARGS = "rig-args.txt"   # the parameters a restored guest reads
    DOMAIN_XML = "domain.xml"        # the libvirt backend's domain
    LIBVIRT_URI = "libvirt-uri.txt"  # and the daemon that ran it
    QEMU_TRACE = "qemu-trace.log"    # its QEMU's trace: the guest's exit status
    SUMMARY = "summary.json"         # outcome, phases, versions of the inputs
    BUNDLE = "bundle.json"           # what replays the run (rig.bundle)
    # Written by the tools that read a finished run.
    GOLDEN_TRANSCRIPT = "console.golden.txt"   # the transcript as golden/ holds it
    REPLAY = "replay.json"           # a replay's verdict on each evidence file
    REPORT = "report.html"           # rig report's page

    def file(self, name: str) -> Path:
        return self.path / name

    @property
    def console_log(self) -> Path:
        return self.file(self.CONSOLE)

    @property
    def uart_log(self) -> Path:
        return self.file(self.UART)

    @property
    def side_log(self) -> Path:
        return self.file(self.SIDE)

    @property
    def console2_log(self) -> Path:
        return self.file(self.CONSOLE2)

    @property
    def uart2_log(self) -> Path:
        return self.file(self.UART2)

    def has(self, name: str) -> bool:
        return self.file(name).is_file()

    def read_bytes(self, name: str, missing: Optional[bytes] = None) -> bytes:
        """The file's bytes; missing (if given) when it does not exist."""
        path = self.file(name)
        if missing is not None and not path.exists():
            return missing
        return path.read_bytes()

    def read_json(self, name: str, missing: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """A JSON record of the run; missing (if given) when the run did not
        write it."""
        path = self.file(name)
        if missing is not None and not path.is_file():
            return missing
        return json.loads(path.read_text())

    def write_text(self, name: str, text: str) -> Path:
        path = self.file(name)
        write_text(path, text)
        return path

    def write_json(self, name: str, record: Any, indent: Optional[int] = 2) -> Path:
        return self.write_text(name, json.dumps(record, indent=indent) + "\n")


@dataclass
class PhaseResult:
    name: str
    ended_by: str            # matched, qemu-exit, panic, timeout, held, skipped
    wall_s: float


@dataclass
class BootResult:
    """What a boot left: its run directory, how it ended and how long each
    phase took."""
    run_dir: Path
    outcome: outcome_mod.Outcome
    phases: List[PhaseResult]
    wall_s: float
    summary: Dict = field(default_factory=dict)

    @property
    def run(self) -> RunDir:
        return RunDir(self.run_dir)

    @property
    def console(self) -> bytes:
        return self.run.read_bytes(RunDir.CONSOLE)

    @property
    def side(self) -> bytes:
        return self.run.read_bytes(RunDir.SIDE, missing=b"")
