"""A boot's phases: what ends each one on the console, how long it may take,
and the state machine that drives a running machine through them.

    firmware  until the kernel banner "Linux version"
    kernel    until rig-init says "rig-init: start"
    init      until rig-init says "rig-init: end status=N"
    exit      until QEMU exits

A boot restored from a snapshot (rig/vm/snapshot.py) has a "restore" phase
instead of firmware and kernel: its prelude loads the saved VM over QMP and
runs it. A warm-reset boot (S10's ramoops read-back) panics on purpose: its
"panic" phase ends with the panic banner, and the boot after the reset goes
through firmware, kernel and init again before QEMU exits. A panic=0 boot
holds: QEMU must still run at the end of its "hold" phase.
"""
import re
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional

from rig.rundir import PhaseResult
from rig.vm import outcome as outcome_mod
from rig.vm.qmp import QMPError

PANIC_RE = re.escape(outcome_mod.PANIC_BANNER).encode()
PANIC_END_RE = rb"---\[ end Kernel panic - not syncing: .* \]---"
HOLD_S = 2.0


@dataclass
class Phase:
    name: str
    until: Optional[bytes]   # console regex that ends the phase; None: QEMU exit
    timeout_s: float
    panic_ends_it: bool = False   # the panic is expected: it ends this phase, the boot goes on
    holds: bool = False      # until None: QEMU must *not* exit before the timeout (panic=0)


def default_phases(init_timeout_s: float = 60.0, slow: float = 1.0) -> List[Phase]:
    return [
        Phase("firmware", rb"Linux version \S+", 30 * slow),
        Phase("kernel", rb"rig-init: start", 60 * slow),
        Phase("init", rb"rig-init: end status=-?\d+", init_timeout_s * slow),
        Phase("exit", None, 20 * slow),
    ]


def warm_reset_phases(init_timeout_s: float = 60.0, slow: float = 1.0) -> List[Phase]:
    """Boot, panic, reboot by a warm reset (QEMU without -no-reboot), boot again."""
    first, again = default_phases(init_timeout_s, slow)[:2], default_phases(init_timeout_s, slow)
    return first + [Phase("panic", PANIC_RE, init_timeout_s * slow, panic_ends_it=True),
                    Phase("reboot firmware", again[0].until, again[0].timeout_s),
                    Phase("reboot kernel", again[1].until, again[1].timeout_s)] + again[2:]


def panic_hold_phases(init_timeout_s: float = 60.0, slow: float = 1.0) -> List[Phase]:
    """Boot, panic with panic=0: the kernel prints the end-of-panic line and
    stays; QEMU must still run HOLD_S later, then the rig ends the run."""
    first = default_phases(init_timeout_s, slow)[:2]
    return first + [Phase("panic", PANIC_RE, init_timeout_s * slow, panic_ends_it=True),
                    Phase("panic end", PANIC_END_RE, init_timeout_s * slow),
                    Phase("hold", None, HOLD_S, holds=True)]


@dataclass
class Driven:
    """How the phases went: each one's result, the phase that hung (None if
    none did) and the last phase entered."""
    results: List[PhaseResult] = field(default_factory=list)
    hung: Optional[str] = None
    last: Optional[str] = None


def since(start: float) -> float:
    return round(time.monotonic() - start, 3)


def drive(machine, phases: List[Phase], alive: bool,
          prelude: Optional[Callable] = None, on_phase: Optional[Callable] = None) -> Driven:
    """Take a started machine through its phases (none if it is not alive),
    then wait for QEMU to exit unless a phase hung or the machine ended.
    machine.wait(until, timeout_s, watch_panic) says how a wait ended:
    matched, panic, qemu-exit or timeout."""
    out = Driven()
    pending = list(phases) if alive else []
    if pending and prelude is not None:
        start = time.monotonic()
        try:
            prelude(machine)
            out.results.append(PhaseResult("restore", "matched", since(start)))
        except QMPError as e:
            out.results.append(PhaseResult("restore", f"failed: {e}", since(start)))
            out.hung, out.last, pending = "restore", "restore", []
    finished = panicked = False
    while pending:
        phase = pending.pop(0)
        out.last = phase.name
        start = time.monotonic()
        # After an expected panic, its own later lines repeat the banner.
        how = machine.wait(phase.until, phase.timeout_s,
                           watch_panic=not (phase.holds or panicked))
        if how == "panic" and phase.panic_ends_it:
            how, panicked = "matched", True
        if phase.holds:
            # Still running at the end: the hold held. An exit ends the boot.
            how = "held" if how == "timeout" else how
            finished = how != "held" or not pending
        out.results.append(PhaseResult(phase.name, how, since(start)))
        if phase.holds:
            if how != "held":
                break
            continue
        if how == "timeout":
            out.hung = phase.name
            break
        if how == "matched" and on_phase is not None:
            on_phase(machine, phase.name)
        if how in ("qemu-exit", "panic"):
            finished = how == "qemu-exit"
            break
    if out.hung is None and not finished:
        # After a panic wait for QEMU to exit on its own (panic=-1, -no-reboot).
        exit_phase = phases[-1]
        pending = [p for p in pending if p is not exit_phase]
        start = time.monotonic()
        how = machine.wait(None, exit_phase.timeout_s, watch_panic=False)
        out.results.append(PhaseResult("exit", how, since(start)))
        if how == "timeout":
            out.hung = f"{out.last or 'qemu'} (after it, QEMU did not exit)"
    for p in pending:
        out.results.append(PhaseResult(p.name, "skipped", 0.0))
    return out
