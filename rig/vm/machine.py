"""One boot under the rig's QEMU: spawn it, drive the phases (rig.vm.phases),
classify how the boot ended, clean up.

The serial console (ttyS0) is QEMU's stdio chardev on a pty that pexpect
reads; QEMU itself logs every console byte to console.log, which is the
authoritative transcript. A boot first waits for QMP ("qemu" phase), then
rig.vm.phases.drive takes it through its phases, each ended by a console
pattern and bounded by its own timeout, with Machine.wait.

QEMU is its own process group with PR_SET_PDEATHSIG=SIGKILL, and every exit
path of the harness kills that group, so no QEMU outlives the rig.
"""
import atexit
import contextlib
import json
import os
import signal
import time
from pathlib import Path
from typing import IO, Callable, List, Optional, Tuple

import pexpect

from rig import paths, rundir
from rig.children import set_death_signal
from rig.faults import RigFault
from rig.rundir import BootResult, PhaseResult, RunDir
from rig.vm import hostshare, vcpu_stacks
from rig.vm import outcome as outcome_mod
from rig.vm.phases import PANIC_RE, Phase, drive, since
from rig.vm.qemu_argv import CONSOLE_UART_QOM, MachineConfig, build_argv
from rig.vm.qmp import QMPClient, QMPError

LAST_LINES = 15
POLL_S = 0.2
VMSTATE_FD = "vmstate"       # the name QEMU knows a passed state file by
LOAD_TIMEOUT_S = 60.0


class QEMUStartError(RigFault):
    """The QEMU binary could not be run at all (a QEMU that starts and dies
    is a run of its own, class qemu-crash)."""


_live: "set[Machine]" = set()


def _kill_all_live() -> None:
    for m in list(_live):
        m.kill()


atexit.register(_kill_all_live)


def _child_setup(stderr_path: str, harness: int) -> None:
    """Runs in the forked child before exec: die with the harness, own stderr.

    (ptyprocess has closed inherited descriptors by now, so open by path.)"""
    set_death_signal(signal.SIGKILL, harness)
    # QEMU's files and sockets are its user's alone, whatever the caller's umask.
    os.umask(rundir.QEMU_UMASK)
    fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, rundir.FILE_MODE)
    os.dup2(fd, 2)
    os.close(fd)


class ConsoleTally:
    """Counts the console bytes the harness reads (and passes them on to a
    live view), to check console.log against: QEMU writes the log itself
    and drops what it cannot write."""

    def __init__(self, live: Optional[IO] = None):
        self.live = live
        self.bytes = 0
        self.newlines = 0

    def write(self, data: bytes) -> None:
        self.bytes += len(data)
        self.newlines += data.count(b"\n")
        if self.live is not None:
            self.live.write(data)

    def flush(self) -> None:
        if self.live is not None:
            self.live.flush()


def last_lines(path: Path, n: int = LAST_LINES) -> str:
    try:
        return last_lines_of(path.read_bytes()[-8192:], n)
    except FileNotFoundError:
        return "(no console output)"


def last_lines_of(data: bytes, n: int = LAST_LINES) -> str:
    """The last n lines of console bytes that are not blank."""
    text = data.decode("utf-8", "replace")
    lines = [ln.rstrip("\r") for ln in text.split("\n") if ln.strip()]
    return "\n".join(lines[-n:]) or "(no console output)"


class Machine:
    """A QEMU process for one boot; use as a context manager."""
    # QEMU's stdio console on a pty: the line discipline turns each "\n"
    # QEMU writes into "\r\n" on the harness's side (OPOST, ONLCR).
    console_adds_cr = True
    console_uart_qom = CONSOLE_UART_QOM     # where qom-set finds the console UART
    # The console the harness reads is every byte QEMU sent (False), or a
    # live view that may miss the end (a remote host's console stream).
    console_is_live_view = False

    def __init__(self, cfg: MachineConfig, phases: List[Phase], live: Optional[IO] = None,
                 on_phase: Optional[Callable[["Machine", str], None]] = None,
                 argv: Optional[List[str]] = None,
                 prelude: Optional[Callable[["Machine"], None]] = None,
                 lock_timeout_s: Optional[float] = None):
        self.cfg = cfg
        self.lock_timeout_s = lock_timeout_s
        self.host_wait_s = 0.0        # how long __enter__ waited for the host lock
        self.tally = ConsoleTally(live)
        self.console_prefix = 0       # console.log bytes from before QEMU (a restore)
        self.console_eof = False      # the harness read the console to its end
        self.write_errors: List[str] = []
        # Run once QMP is up, before the phases (a snapshot restore); raises QMPError.
        self.prelude = prelude
        # Called after each phase that ended by its pattern, in the harness
        # thread, so it may use self.qmp (for example to arm a trigger).
        self.on_phase = on_phase
        self.phases = phases
        self.live = live
        self.child: Optional[pexpect.spawn] = None
        self.qmp: Optional[QMPClient] = None
        # A replay passes the recorded command line (its paths substituted).
        self.argv = argv if argv is not None else build_argv(cfg)
        self._killed_by_rig = False

    # -- process lifetime -------------------------------------------------
    def write_plan(self) -> None:
        """argv.json and cmdline.txt into the run directory; no stale QMP socket."""
        rundir.make_private(self.cfg.run_dir)
        run = self.cfg.run
        run.write_json(RunDir.ARGV, self.argv, indent=1)
        run.write_text(RunDir.CMDLINE, self.argv[self.argv.index("-append") + 1] + "\n")
        log = self.cfg.run.console_log
        self.console_prefix = log.stat().st_size if self.cfg.restore and log.exists() else 0
        if self.cfg.qmp_socket.exists():
            self.cfg.qmp_socket.unlink()

    def start(self) -> None:
        self.write_plan()
        stderr_path, harness = str(self.qemu_stderr()), os.getpid()
        try:
            self.child = pexpect.spawn(self.argv[0], self.argv[1:], timeout=None,
                                       maxread=4096, searchwindowsize=16384, echo=False,
                                       preexec_fn=lambda: _child_setup(stderr_path, harness))
        except (pexpect.ExceptionPexpect, OSError) as e:
            raise QEMUStartError(f"QEMU {self.argv[0]} cannot be started: {e}; rebuild it "
                                 "with `make qemu`") from None
        _live.add(self)
        self.note(RunDir.QEMU_PID, f"{self.child.pid}\n")
        self.child.logfile_read = self.tally

    def note(self, name: str, text: str) -> None:
        """Write a file of the harness's into the run directory while QEMU
        runs or after: a failure (a full disk) is kept for the verdict
        (write_errors), not raised into the middle of a boot."""
        try:
            self.cfg.run.write_text(name, text)
        except rundir.RunDirError as e:
            self.write_errors.append(str(e))

    def kill(self) -> None:
        """Kill QEMU's process group and reap it; safe to call twice."""
        child = self.child
        if child is None:
            return
        if child.isalive():
            self._killed_by_rig = True
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                child.wait()
            except pexpect.ExceptionPexpect:
                pass
        child.close(force=True)
        self.release(self.cfg.qmp_socket)

    def release(self, *sockets: Path) -> None:
        """After QEMU is gone: close QMP, remove its sockets (in the run
        directory, or a long run directory's short ones in the runtime
        directory: nothing listens on them any more), forget the machine."""
        if self.qmp is not None:
            self.qmp.close()
        for sock in sockets:
            sock.unlink(missing_ok=True)
        _live.discard(self)

    def __enter__(self) -> "Machine":
        with contextlib.ExitStack() as stack:
            asked = time.monotonic()
            stack.enter_context(hostshare.hold(alone=hostshare.alone_on(self.cfg.clock),
                                                what=self.cfg.run_dir.name,
                                                timeout_s=self.lock_timeout_s,
                                                path=self.host_lock()))
            self.host_wait_s = since(asked)
            self.start()
            self._host = stack.pop_all()    # held until __exit__; released if start fails
        return self

    def host_lock(self) -> Optional[Path]:
        """The lock of the host QEMU runs on; None: this machine's."""
        return None

    def __exit__(self, *exc) -> None:
        with self._host:
            self.kill()

    def exit_status(self, events: List[dict]) -> Tuple[Optional[int], Optional[int]]:
        """QEMU's exit status and terminating signal; (None, None) when the rig
        killed it."""
        if self._killed_by_rig:
            return None, None
        return self.child.exitstatus, self.child.signalstatus

    def qemu_stderr(self) -> Path:
        return self.cfg.run.file(RunDir.QEMU_STDERR)

    # -- driving a boot ---------------------------------------------------
    def wait(self, until: Optional[bytes], timeout_s: float, watch_panic: bool = True) -> str:
        """Wait for a console pattern (or QEMU's exit). Returns how it ended."""
        assert self.child is not None
        # An unmatchable panic pattern keeps the indexes fixed when not watching.
        patterns = [pexpect.EOF, PANIC_RE if watch_panic else rb"(?!x)x"] + \
            ([until] if until is not None else [])
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            try:
                i = self.child.expect(patterns, timeout=min(POLL_S, left))
            except pexpect.TIMEOUT:
                if self.qmp is not None:
                    self.qmp.poll()
                continue
            if i == 0:
                self.console_eof = True
            return ("qemu-exit", "panic", "matched")[i]

    def run(self) -> BootResult:
        """Drive every phase, then classify how the boot ended."""
        assert self.child is not None, "start() first"
        t0 = time.monotonic()
        results: List[PhaseResult] = []
        last = "qemu"
        try:
            self.qmp = self.open_qmp()
            results.append(PhaseResult("qemu", "matched", since(t0)))
        except QMPError as e:
            results.append(PhaseResult("qemu", f"failed: {e}", since(t0)))
            self.qmp = None
        alive = self.qmp is not None and self.child.isalive()
        driven = drive(self, self.phases, alive, self.prelude, self.on_phase)
        results += driven.results
        hung, last = driven.hung, driven.last or last
        stacks = self._vcpu_stacks() if hung is not None else ""
        if hung is None and self.qmp is not None:
            self.qmp.drain(timeout=1.0)
        self.kill()
        events = self.qmp.events if self.qmp is not None else []
        status, sig = self.exit_status(events)
        self.note(RunDir.QMP_EVENTS, "".join(json.dumps(ev) + "\n" for ev in events))
        console = self.cfg.run.read_bytes(RunDir.CONSOLE, missing=b"")
        oc = outcome_mod.classify(status, sig, hung, last, events,
                                  console.decode("utf-8", "replace"))
        if hung == "restore":
            oc.detail += f"; {results[-1].ended_by}"
        if oc.cls in ("hang", "qemu-crash", "panic") or hung:
            oc.detail += "; last console lines:\n" + last_lines(self.cfg.run.console_log)
        if stacks:
            where = self.cfg.run.file(RunDir.VCPU_STACKS)
            oc.detail += (f"\nvCPU stacks at the hang (all samples in {where}):\n"
                          + vcpu_stacks.summary(stacks))
        if oc.cls == "qemu-crash":
            oc.detail += "\nQEMU stderr:\n" + last_lines(self.qemu_stderr())
        return BootResult(self.cfg.run_dir, oc, results, since(t0))


    def open_qmp(self) -> QMPClient:
        """QMP of this QEMU, negotiated; raises QMPError."""
        qmp = QMPClient(str(self.cfg.qmp_socket))
        self.qmp = qmp
        qmp.connect(timeout=15.0, alive=self.child.isalive)
        return qmp

    def pass_fd(self, path: Path, flags: int) -> None:
        """Open path here and hand the descriptor to QEMU as VMSTATE_FD:
        QEMU's sandbox lets it spawn no `cat`, and the file stays the
        harness's to open."""
        fd = os.open(path, flags | os.O_CLOEXEC, 0o600)
        try:
            self.qmp.execute("getfd", {"fdname": VMSTATE_FD}, fds=[fd])
        finally:
            os.close(fd)

    def load_state(self, vmstate: Path) -> None:
        """Load a saved VM (rig.vm.snapshot) into this QEMU, waiting with
        -incoming defer; it stays paused. Raises QMPError."""
        # After an incoming migration QEMU announces the guest's NICs on a
        # host-clock timer for about a second, and under -icount a pending
        # host-clock timer cuts the vCPU's instruction budget at host-timed
        # points: restores then differ run to run. Zero rounds: no timer.
        self.qmp.execute("migrate-set-parameters", {"announce-rounds": 0})
        self.pass_fd(vmstate, os.O_RDONLY)
        self.qmp.execute("migrate-incoming", {"uri": f"fd:{VMSTATE_FD}"})
        deadline = time.monotonic() + LOAD_TIMEOUT_S
        while (self.qmp.execute("query-status") or {}).get("status") != "paused":
            if time.monotonic() > deadline or not self.child.isalive():
                raise QMPError(f"the saved state {vmstate} did not load (QEMU stderr: "
                               f"{last_lines(self.qemu_stderr(), 3)})")
            time.sleep(0.01)

    def _vcpu_stacks(self) -> str:
        """Where each vCPU is, while QEMU still runs: written to the run
        directory. Best effort: a QEMU that does not answer gives nothing."""
        if self.qmp is None or self.child is None or not self.child.isalive():
            return ""
        system_map = paths.kernel_build_of(self.cfg.kernel) / "System.map"
        try:
            text = vcpu_stacks.sample(self.qmp, self.cfg.smp, system_map)
        except QMPError as e:
            text = f"# vCPU stacks not read: {e}\n"
        self.note(RunDir.VCPU_STACKS, text)
        return text

    def console_log_expected(self) -> Optional[int]:
        """The bytes console.log must hold, from what the harness read; None
        when it cannot tell (QEMU was killed before the harness read all)."""
        if not self.console_eof:
            return None
        return (self.console_prefix + self.tally.bytes
                - (self.tally.newlines if self.console_adds_cr else 0))


def install_signal_cleanup() -> None:
    """Turn SIGTERM/SIGHUP into KeyboardInterrupt so that every finally block
    runs. Not SystemExit: pytest counts that as one failed test and goes on
    with the next, where KeyboardInterrupt ends the whole session."""
    def handler(signum, _frame):
        _kill_all_live()
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, handler)
