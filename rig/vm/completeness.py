"""Is a run's evidence whole? Each file is held to a count kept apart from
it, before any verdict: a cut file must never pass for a quiet kernel.

console.log   the console bytes the harness read from QEMU's console (QEMU
              writes the log itself and silently drops what it cannot write);
              on a remote host, where the console stream is a live view
              whose end the pty's hangup may cut, the log must begin with
              every byte the stream carried
uart.log      the device's own count of the records it logged and lost,
(uart2.log)   which QEMU writes into the header when it ends (format version 2)
side.bin      its framing, and init's final status line, which a run that
              ended through init's exit port must have sent last
harness       every file the harness wrote into the run directory

A run with a problem here ends in the class rig-error (rig.vm.outcome), naming
the file, the byte or record count and the error.
"""
from pathlib import Path
from typing import List

from rig.evidence import sidechannel, uartlog
from rig.rundir import RunDir
from rig.vm.outcome import DEBUG_EXIT_CODES, Outcome


def console_view_problem(log: Path, prefix: int, seen: int, seen_sha256: str) -> List[str]:
    """The log must hold, after the restore's prefix, the bytes the live view saw."""
    import hashlib
    data = log.read_bytes() if log.exists() else b""
    if len(data) < prefix + seen:
        return [f"console.log holds {len(data)} bytes, fewer than the {prefix + seen} the "
                "console stream showed: QEMU could not write them (a full disk in the "
                "host's pool or a write error)"]
    if hashlib.sha256(data[prefix:prefix + seen]).hexdigest() != seen_sha256:
        return [f"console.log differs from the {seen} bytes the console stream showed "
                f"(from byte {prefix} on): the log is not the console's"]
    return []


def console_problem(run_dir: Path, machine, died_by_signal: bool = False) -> List[str]:
    if machine.console_is_live_view:
        return console_view_problem(RunDir(run_dir).console_log, machine.console_prefix,
                                    machine.tally.bytes, machine.tally.sha256.hexdigest())
    expected = machine.console_log_expected()
    if expected is None:
        return []
    log = RunDir(run_dir).console_log
    size = log.stat().st_size if log.exists() else 0
    if size == expected:
        return []
    # QEMU writes a console byte to the pty, then to its log: a QEMU that a
    # signal killed between the two sent bytes its log never got. Its run
    # is a qemu-crash, with no verdict on the kernel to protect.
    if died_by_signal and size < expected:
        return []
    # More in the log than the harness read: QEMU exited with bytes still in
    # the pty, and the hangup of its end discarded them before the harness
    # read them (seen on the debug profile's slower kernels). QEMU writes a
    # byte to the pty before its log, so the log holds them: it is whole.
    if size > expected:
        return []
    return [f"console.log holds {size} bytes, QEMU's console sent {expected}: QEMU could not "
            f"write the last {expected - size} (a full disk or a write error)"]


def register_log_problem(path: Path, cpus: int, qemu_ended_by_itself: bool) -> List[str]:
    if not path.exists():
        return [f"{path.name} is missing: QEMU did not start the device or could not create "
                "the file"]
    try:
        log = uartlog.read(path, cpus)
    except uartlog.UartLogError as e:
        return [str(e)]
    short = uartlog.shortfall(log)
    if short:
        return [f"{path.name} {short}"]
    if qemu_ended_by_itself and log.header.version >= 2 and \
            log.header.state != uartlog.STATE_CLOSED:
        return [f"{path.name} was not closed by QEMU, which ended by itself: its count of "
                f"records is missing ({len(log.records)} records in the file)"]
    return []


def side_channel_problem(path: Path, outcome: Outcome) -> List[str]:
    """A run that ended through init's exit port sent its status line last."""
    if DEBUG_EXIT_CODES.get(outcome.exit_status) is None:
        return []
    data = path.read_bytes() if path.exists() else b""
    try:
        side = sidechannel.parse(data)
    except sidechannel.SideChannelError as e:
        return [f"side.bin ({len(data)} bytes): {e}"]
    code = outcome.exit_status >> 1
    if side.status != code:
        return [f"side.bin ({len(data)} bytes) ends without init's status line "
                f"'@@rig status {code}' that came before its exit: the side channel "
                f"was cut"]
    return []


def problems(run_dir: Path, machine, outcome: Outcome) -> List[str]:
    """Everything incomplete in the run's evidence; [] when it is whole."""
    cfg = machine.cfg
    found = list(machine.write_errors)
    if outcome.phase == "qemu":
        # QEMU never came up: there is no evidence to be whole (qemu-crash says why).
        return found
    # QEMU exited with a status of its own (not killed by the rig or a signal).
    ended_by_itself = outcome.exit_status is not None and outcome.signal is None
    found += console_problem(run_dir, machine, died_by_signal=outcome.signal is not None)
    found += register_log_problem(cfg.run.uart_log, cfg.smp, ended_by_itself)
    if cfg.second_uart:
        found += register_log_problem(cfg.run.uart2_log, cfg.smp, ended_by_itself)
    found += side_channel_problem(cfg.run.side_log, outcome)
    return found
