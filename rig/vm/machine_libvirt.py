"""The libvirt backend: the same boot as rig.vm.machine.Machine, with QEMU
started by libvirtd from a transient domain (rig.vm.libvirt_domain) on any
libvirt URI the harness can reach with the run directory and build cache at
the same paths (qemu:///system by default).

The domain is created paused with VIR_DOMAIN_START_AUTODESTROY, so that it
dies with the harness's connection whatever happens to the harness; the
harness connects to the console socket, then resumes it. libvirt keeps
QEMU's exit status to itself, so it is read back from the isa-debug-exit
trace (qemu-trace.log); a QEMU that stopped on a guest reset or poweroff
(a SHUTDOWN event on the rig's QMP socket) is QEMU exiting 0, as under
-no-reboot in the direct backend.
"""
import hashlib
import os
import re
import socket
import time
from pathlib import Path
from typing import List, Optional, Tuple

from pexpect import fdpexpect

from rig.artifacts import firmware
from rig.rundir import RunDir
from rig.vm import libvirt_stage
from rig.vm.libvirt_domain import domain_xml
from rig.vm.machine import Machine, _live
from rig.faults import RigFault

DEFAULT_URI = "qemu:///system"
EXIT_TRACE = re.compile(rb"debug_exit_write guest wrote 0x[0-9a-f]+, exit status (\d+)")
GONE_WAIT_S = 5.0         # for libvirt to notice a QEMU that exited by itself
# What QEMU writes into the run directory (staged while it runs).
STAGED_OUTPUT = RunDir.EVIDENCE + RunDir.SECOND_CONSOLE_EVIDENCE + (RunDir.QEMU_TRACE,)


class LibvirtBackendError(RigFault, RuntimeError):
    """libvirt is missing, unreachable or refused the domain; says what to do."""


def open_connection(uri: str):
    try:
        import libvirt
    except ImportError:
        raise LibvirtBackendError("the libvirt backend needs python3-libvirt: run `make deps`")
    libvirt.registerErrorHandler(lambda *_: None, None)    # errors come as exceptions
    try:
        return libvirt.open(uri)
    except libvirt.libvirtError as e:
        raise LibvirtBackendError(
            f"cannot connect to libvirt at {uri}: {e}; is libvirtd running? "
            "(`make libvirtd` starts it here)") from None


def domain_name(run_dir: Path) -> str:
    """Unique like the run directory (libvirt names are at most 200 bytes here)."""
    digest = hashlib.sha256(str(run_dir).encode()).hexdigest()[:8]
    return f"rig-{run_dir.name[:60]}-{digest}"


def domain_active(dom) -> bool:
    import libvirt
    try:
        return dom is not None and bool(dom.isActive())
    except libvirt.libvirtError:      # a transient domain is gone once it stopped
        return False


def end_domain(dom, console_closed: bool) -> bool:
    """Let a domain whose console ended go by itself (QEMU is on its way
    out), else destroy it; True when the rig destroyed it."""
    import libvirt
    deadline = time.monotonic() + (GONE_WAIT_S if console_closed else 0)
    while domain_active(dom) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not domain_active(dom):
        return False
    try:
        dom.destroy()
    except libvirt.libvirtError:
        pass
    return True


def exit_status_from_trace(run: RunDir, killed_by_rig: bool,
                           events: List[dict]) -> Tuple[Optional[int], Optional[int]]:
    """QEMU's exit status as libvirt's QEMU leaves it: the guest's write to
    isa-debug-exit in the trace log, else a reset or poweroff (exit 0)."""
    trace = run.file(RunDir.QEMU_TRACE)
    found = EXIT_TRACE.findall(trace.read_bytes()) if trace.is_file() else []
    if found:
        return int(found[-1]), None
    if killed_by_rig:
        return None, None
    if any(e.get("event") == "SHUTDOWN" for e in events):
        return 0, None          # stopped on a reset or poweroff: -no-reboot's exit 0
    return None, None


class LibvirtMachine(Machine):
    console_adds_cr = False      # a unix socket: the bytes as QEMU wrote them

    def __init__(self, cfg, phases, uri: str = DEFAULT_URI, **kwargs):
        super().__init__(cfg, phases, **kwargs)
        self.uri = uri
        self.name = domain_name(cfg.run_dir)
        self.conn = None
        self.dom = None
        self.sock: Optional[socket.socket] = None
        self.stage_dir: Optional[Path] = None

    @property
    def console_socket(self) -> Path:
        return self.cfg.socket("console")

    def stage(self) -> List[str]:
        """QEMU's command line with its inputs and output staged where
        libvirt's QEMU user reaches them (rig.vm.libvirt_stage); the run
        directory gets symlinks to the staged output meanwhile."""
        self.stage_dir = libvirt_stage.run_stage(self.name)
        run_dir = self.cfg.run_dir
        moves = {str(p): str(libvirt_stage.stage_input(Path(p)))
                 for p in (self.argv[0], self.argv[self.argv.index("-kernel") + 1],
                           self.argv[self.argv.index("-initrd") + 1])}
        for i, a in enumerate(self.argv[:-1]):
            if a == "-L" and self.cfg.firmware is not None:
                d = self.argv[i + 1]
                moves[d] = str(libvirt_stage.stage_directory(Path(d), firmware.FILES))
        for name in ("qmp", "console"):
            sock = self.cfg.socket(name)
            moves[str(sock)] = str(self.stage_dir / f"{name}.sock")
            sock.unlink(missing_ok=True)
            sock.symlink_to(self.stage_dir / f"{name}.sock")
        for name in STAGED_OUTPUT:
            # A restore's evidence starts with the template's: QEMU appends.
            libvirt_stage.stage_output(run_dir / name, self.stage_dir)
            (run_dir / name).unlink(missing_ok=True)
            (run_dir / name).symlink_to(self.stage_dir / name)
        if self.cfg.fw_cfg_args:
            # The scenario's parameters a restored init reads through fw_cfg.
            libvirt_stage.stage_output(Path(self.cfg.fw_cfg_args), self.stage_dir)
        moves[str(run_dir)] = str(self.stage_dir)
        # Exact paths first, then the run directory as a prefix.
        return [next((a.replace(old, new) for old, new in moves.items() if old in a), a)
                for a in self.argv]

    def start(self) -> None:
        import libvirt
        self.write_plan()
        xml = domain_xml(self.stage(), self.name, str(self.stage_dir / "console.sock"),
                         str(self.stage_dir / RunDir.QEMU_TRACE), self.cfg.warm_reset)
        run = self.cfg.run
        domain_file = run.write_text(RunDir.DOMAIN_XML, xml)
        run.write_text(RunDir.LIBVIRT_URI, self.uri + "\n")
        self.conn = open_connection(self.uri)
        _live.add(self)
        try:
            self.dom = self.conn.createXML(xml, libvirt.VIR_DOMAIN_START_PAUSED |
                                           libvirt.VIR_DOMAIN_START_AUTODESTROY)
        except libvirt.libvirtError as e:
            raise LibvirtBackendError(f"libvirt at {self.uri} refused domain {self.name} "
                                      f"({domain_file}): {e}") from None
        pid = self._qemu_pid()
        if pid:
            self.note(RunDir.QEMU_PID, f"{pid}\n")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(self.console_socket))
        # The descriptor is the pexpect object's from here on; it closes it.
        self.child = fdpexpect.fdspawn(self.sock.detach(), timeout=None, maxread=4096,
                                       searchwindowsize=16384)
        self.sock = None
        self.child.logfile_read = self.tally
        if not self.cfg.restore:        # a restore's prelude loads the state, then runs it
            self.dom.resume()

    def _qemu_pid(self) -> Optional[int]:
        """libvirtd's pid file of the domain (local URIs; None elsewhere)."""
        for run in ("/run/libvirt/qemu", os.path.expanduser("~/.cache/libvirt/qemu/run")):
            p = Path(run) / f"{self.name}.pid"
            if p.is_file():
                return int(p.read_text().split()[0])
        return None

    def kill(self) -> None:
        import libvirt
        if self.dom is not None:
            if end_domain(self.dom, self._console_closed()):
                self._killed_by_rig = True
            self.dom = None
        if self.child is not None:
            self.child.close()
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.conn is not None:
            try:
                self.conn.close()
            except libvirt.libvirtError:
                pass
            self.conn = None
        self.release(self.cfg.qmp_socket, self.console_socket)
        if self.stage_dir is not None:
            libvirt_stage.collect(self.cfg.run_dir, self.stage_dir)
            self.stage_dir = None

    def _console_closed(self) -> bool:
        return self.child is not None and getattr(self.child, "flag_eof", False)

    def exit_status(self, events: List[dict]) -> Tuple[Optional[int], Optional[int]]:
        return exit_status_from_trace(self.cfg.run, self._killed_by_rig, events)

    def qemu_stderr(self) -> Path:
        return Path("/var/log/libvirt/qemu") / f"{self.name}.log"
