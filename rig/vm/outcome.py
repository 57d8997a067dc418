"""How a boot ended, in named classes the rest of the rig can assert on.

clean        init ran every step and wrote protocol.EXIT_OK to isa-debug-exit
guest-error  init wrote another code: a step failed (the code says which class)
panic        the kernel panicked (pvpanic GUEST_PANICKED event, or the panic
             banner on the console followed by a reset)
hang         a phase did not finish within its timeout; the rig killed QEMU
qemu-crash   QEMU died by a signal or exited with a status of its own
reset        the guest reset or powered off without a panic and without init's
             status (for example a triple fault)
rig-error    the rig's own evidence is incomplete (a full disk, a write error,
             a cut file: rig.vm.completeness), whatever the boot did; never a
             verdict on the kernel
"""
import re
import signal
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

from rig import protocol
from rig.evidence import crash

# isa-debug-exit turns a guest write of v into QEMU exit status (v << 1) | 1.
DEBUG_EXIT_CODES = {(protocol.EXIT_OK << 1) | 1: "ok", (protocol.EXIT_FAIL << 1) | 1: "step failed"}

PANIC_BANNER = "Kernel panic - not syncing"

CLASSES = ("clean", "guest-error", "panic", "hang", "qemu-crash", "reset", "rig-error")


@dataclass
class Outcome:
    cls: str
    detail: str
    phase: Optional[str] = None          # the phase that hung, or where the run ended
    exit_status: Optional[int] = None    # QEMU's exit status, None when killed by the rig
    signal: Optional[str] = None         # signal that killed QEMU, if not the rig's kill
    events: List[str] = field(default_factory=list)

    def to_json(self) -> Dict[str, Any]:
        d = asdict(self)
        d["class"] = d.pop("cls")
        return d


def rig_error(problems: List[str], boot: Outcome) -> Outcome:
    """The outcome of a run whose evidence is incomplete: its problems first,
    then how the boot itself ended."""
    return Outcome("rig-error", "evidence incomplete: " + "; ".join(problems)
                   + f"\n(the boot itself ended {boot.cls}: {boot.detail})",
                   phase=boot.phase, exit_status=boot.exit_status, signal=boot.signal,
                   events=boot.events)


FAILED_STEP_RE = re.compile(r"rig-init: step (\S+) failed")
# Syslog prefix, timestamp, caller field and the seed design's CPU field.
CONSOLE_PREFIX_RE = re.compile(r"^(<\d+>)?(\[[ \d.]+\] ?)?(\[ *[CT]\d+\] ?)?(\d{3}: )?")


def failed_step_reason(console_text: str) -> str:
    """The step init says failed, with the lines that say why: init's own
    line before it and, for a module that refused to load, the kernel's."""
    lines = [CONSOLE_PREFIX_RE.sub("", ln.strip("\r")) for ln in console_text.split("\n")]
    at = next((i for i in range(len(lines) - 1, -1, -1) if FAILED_STEP_RE.search(lines[i])),
              None)
    if at is None:
        return ""
    # The kernel's lines say why only for the module step: elsewhere a
    # kernel line that came out meanwhile (a clocksource's) is not a reason.
    kernel_says = FAILED_STEP_RE.search(lines[at]).group(1) == "module"
    why = [ln for ln in lines[max(0, at - 3):at]
           if ln and not re.search(r"rig-init: step \S+ begin", ln)
           and (kernel_says or ln.startswith("rig-init:"))]
    return "; ".join(why[-2:] + [lines[at]])


def crash_note(console_text: str) -> str:
    """The first crash headline the console shows, by its title (rig.evidence.crash):
    what a hang or a panic came from, when the kernel said so."""
    found = [c for c in crash.find(console_text.encode("utf-8", "replace"))
             if c.kind != "panic"]      # the banner is in the detail already
    return (f"; first crash: {found[0].title} (console line {found[0].lineno})"
            if found else "")


def classify(exit_status: Optional[int], term_signal: Optional[int], hung_phase: Optional[str],
             last_phase: Optional[str], qmp_events: List[Dict[str, Any]],
             console_text: str) -> Outcome:
    """Decide the outcome class from everything the harness observed."""
    names = [e.get("event", "?") for e in qmp_events]
    shutdown_reasons = [e.get("data", {}).get("reason") for e in qmp_events
                        if e.get("event") == "SHUTDOWN"]
    panicked = "GUEST_PANICKED" in names or "guest-panic" in shutdown_reasons \
        or PANIC_BANNER in console_text
    if hung_phase is not None:
        cls = "panic" if panicked else "hang"
        detail = (f"kernel panicked and QEMU did not exit: stuck in phase {hung_phase}"
                  if panicked else f"guest hung in phase {hung_phase}")
        return Outcome(cls, detail + crash_note(console_text), phase=hung_phase, events=names)
    if term_signal is not None:
        try:
            sig = signal.Signals(term_signal).name
        except ValueError:
            sig = str(term_signal)
        return Outcome("qemu-crash", f"QEMU killed by {sig} in phase {last_phase}",
                       phase=last_phase, signal=sig, events=names)
    if exit_status in DEBUG_EXIT_CODES:
        what = DEBUG_EXIT_CODES[exit_status]
        if what == "ok":
            return Outcome("clean", "init finished every step", phase=last_phase,
                           exit_status=exit_status, events=names)
        reason = failed_step_reason(console_text)
        return Outcome("guest-error", f"init reported: {what}" + (f": {reason}" if reason else ""),
                       phase=last_phase, exit_status=exit_status, events=names)
    if panicked:
        # The banner line says why; a backtrace after it can be longer than
        # the last console lines a report shows.
        banner = next((ln.strip() for ln in console_text.splitlines() if PANIC_BANNER in ln), "")
        return Outcome("panic", "kernel panicked" + (" (pvpanic event)" if "GUEST_PANICKED"
                                                    in names else " (console banner)")
                       + (f": {banner}" if banner else "") + crash_note(console_text),
                       phase=last_phase, exit_status=exit_status, events=names)
    if exit_status == 0:
        why = ", ".join(r for r in shutdown_reasons if r) or "no SHUTDOWN event seen"
        return Outcome("reset", f"guest reset or powered off without init's status ({why})",
                       phase=last_phase, exit_status=exit_status, events=names)
    if exit_status is not None and exit_status & 1 and exit_status > 1:
        return Outcome("guest-error", f"unknown isa-debug-exit code {exit_status >> 1:#x}",
                       phase=last_phase, exit_status=exit_status, events=names)
    return Outcome("qemu-crash", f"QEMU exited with status {exit_status} in phase {last_phase}",
                   phase=last_phase, exit_status=exit_status, events=names)
