"""The interrupts-off (or preemption-off) stretches of a debug-profile run,
as the kernel's latency tracer reported them (rig/guest/latency.c records
each stretch of at least rig.latency_us; side-channel section "latency").

Each report is the tracer's latency-format trace of one stretch; without the
function tracer (the default) its start, its end and the stack that ended it:

    #### report notifications=1
    # tracer: irqsoff
    # latency: 259 us, #4/4, CPU#2 | (M:preempt VP:0, KP:0, SP:0 HP:0 #P:4)
    #    | task: ps-6143 (uid:0 nice:0 policy:0 rt_prio:0)
    #  => started at: __lock_task_sighand
    #  => ended at:   _raw_spin_unlock_irqrestore
          ps-6143    2d...    0us!: trace_hardirqs_off <-__lock_task_sighand
          ps-6143    2d...  259us+: trace_hardirqs_on <-_raw_spin_unlock_irqrestore
          ps-6143    2d...  263us : <stack trace>
     => trace_hardirqs_on
     => _raw_spin_unlock_irqrestore
     => do_task_stat

(Documentation/trace/ftrace.rst, "irqsoff"). The tracer's clock is the
guest's sched_clock: virtual time under -icount.
"""
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional

REPORT = "#### report"
STATE = "#### state"
TRACER_RE = re.compile(r"^# tracer: (\w+)")
LATENCY_RE = re.compile(r"^# latency: (\d+) us, #\d+/\d+, CPU#(\d+)")
TASK_RE = re.compile(r"^#\s+\| task: (\S+)")
STARTED_RE = re.compile(r"^#\s+=> started at:\s+([\w.]+)")
ENDED_RE = re.compile(r"^#\s+=> ended at:\s+([\w.]+)")
# "  ps-6143    2d...    0us!: trace_hardirqs_off <-__lock_task_sighand"
FUNCTION_RE = re.compile(r"^\s*\S+\s+\d+\S*\s+\d+us\S*\s*: ([\w.]+)(?: <-([\w.]+))?")
STACK_RE = re.compile(r"^ => ([\w.]+)")
NOTIFICATIONS_RE = re.compile(r"notifications=(\d+)")

# A console write of one record, on any path (rig/guest/latency.c, FUNCTION_FILTER).
CONSOLE_WRITE = re.compile(r"console_write|emit_next_record|nbcon_emergency_emit")
# Where an interrupt came in: common_interrupt, asm_sysvec_apic_timer_interrupt, ...
INTERRUPT_ENTRY = re.compile(r"asm_|common_interrupt$|sysvec_|exc_nmi$")
# The console path: printk, nbcon, the console drivers and the 8250's.
# And printk's cpu_sync sections (dump_stack(), the NMI backtraces): their
# owner's records are written when it releases the cpu_sync.
CONSOLE_CODE = re.compile(r"printk|nbcon|console|serial8250|univ8250|uart_|wait_for_xmitr|"
                          r"emergency|dump_stack|nmi_\w*backtrace")


@dataclass
class Stretch:
    """One interrupts-off stretch the tracer reported."""
    us: int                     # its length, virtual microseconds
    cpu: int
    tracer: str = "irqsoff"     # what was off: irqsoff, preemptoff or preemptirqsoff
    task: str = ""
    started_at: str = ""        # the function that disabled interrupts
    ended_at: str = ""          # the one that enabled them again
    functions: List[str] = field(default_factory=list)   # what ran in it, in order
    stack: List[str] = field(default_factory=list)       # where it ended, innermost first
    notifications: int = 1      # reports the watcher took at once (it read the newest)
    nmi_handler: str = ""       # for an NMI's stretch: the handler the kernel named

    def console_function(self) -> Optional[str]:
        """A console write the stretch ran; else the console-path function
        that began or ended it, or that the code which ended it was called
        from; None if none was. The stack is read up to the first interrupt
        entry: below it is the code the interrupt came into, not the code
        that ran the stretch."""
        write = next((f for f in self.functions if CONSOLE_WRITE.search(f)), None)
        if write:
            return write
        if CONSOLE_CODE.search(self.nmi_handler):
            return self.nmi_handler
        for name in [self.started_at, self.ended_at] + self.stack:
            if INTERRUPT_ENTRY.match(name):
                break
            if CONSOLE_CODE.search(name):
                return name
        return None

    def console_writes(self) -> int:
        """The console writes of a record the stretch ran (the tracer's
        function filter lists them: rig/guest/latency.c)."""
        return sum(1 for f in self.functions if CONSOLE_WRITE.search(f))

    def describe(self) -> str:
        off = {"irqsoff": "interrupts", "preemptoff": "preemption"}.get(
            self.tracer, "interrupts or preemption")
        writes = self.console_writes()
        return (f"{self.us} us of {off} off on CPU {self.cpu} ({self.task}), from "
                f"{self.started_at or '?'} to {self.ended_at or '?'}" +
                (f", NMI handler {self.nmi_handler}" if self.nmi_handler else "") +
                (f", {writes} console write{'s' if writes != 1 else ''} of a record in it"
                 if writes else ""))


# The kernel's own check of an NMI handler's duration (arch/x86/kernel/nmi.c),
# on the console of the CPU that ran it: "000: INFO: NMI handler
# (nmi_cpu_backtrace_handler) took too long to run: 168.394 msecs".
NMI_HANDLER_RE = re.compile(r"(?:\] (\d{3}): )?INFO: NMI handler \((\w+)\) took too long to "
                            r"run: (\d+)\.(\d{3}) msecs")
# The tracer's stretch of an NMI holds the NMI's entry and exit around the
# handler (0.3 ms on the debug kernel).
NMI_MATCH_US = 1000


def name_nmi_handlers(stretches: List[Stretch], console: Iterable[str]) -> None:
    """An NMI's stretch (started and ended in exc_nmi) does not say which
    handler ran in it: the stack is that of the code the NMI came into. The
    kernel's own NMI duration check names the handler; join the two by CPU
    (when the console has a CPU field) and length."""
    nmis = [s for s in stretches if s.started_at == s.ended_at == "exc_nmi"]
    if not nmis:
        return
    for line in console:
        m = NMI_HANDLER_RE.search(line)
        if not m:
            continue
        cpu, us = m.group(1), int(m.group(3)) * 1000 + int(m.group(4))
        for s in nmis:
            if (not s.nmi_handler and (cpu is None or int(cpu) == s.cpu)
                    and 0 <= s.us - us <= NMI_MATCH_US):
                s.nmi_handler = m.group(2)
                break


def parse(text: str) -> List[Stretch]:
    """The stretches of a "latency" section, in the order they were reported."""
    out: List[Stretch] = []
    current: Optional[Stretch] = None
    notifications, tracer = 1, "irqsoff"
    for line in text.splitlines():
        if line.startswith(REPORT):
            m = NOTIFICATIONS_RE.search(line)
            notifications = int(m.group(1)) if m else 1
            current = None
            continue
        m = TRACER_RE.match(line)
        if m:
            tracer = m.group(1)
            continue
        m = LATENCY_RE.match(line)
        if m:
            current = Stretch(int(m.group(1)), int(m.group(2)), tracer,
                              notifications=notifications)
            out.append(current)
            continue
        if current is None:
            continue
        for regex, attr in ((TASK_RE, "task"), (STARTED_RE, "started_at"),
                            (ENDED_RE, "ended_at")):
            m = regex.match(line)
            if m:
                setattr(current, attr, m.group(1))
                break
        else:
            m = STACK_RE.match(line)
            if m:
                current.stack.append(m.group(1))
                continue
            m = FUNCTION_RE.match(line)
            if m and not line.startswith("#"):
                current.functions.append(m.group(1))
    return out


# The one wait with interrupts off the design allows (kernel-patches/DESIGN.md,
# "Contention"): a friendly handover, up to 2 ms by the clock (0011), and
# 1 ms to acquire, format and hand over, as S19 counts it.
MARGIN_NS = 3_000_000
# With preemption off a caller may also wait for another CPU's emergency
# owner, with interrupts on, up to 2 s (DESIGN.md, "Every console, in order").
PREEMPT_WAIT_NS = 2_000_000_000


def state(text: str) -> Dict[str, str]:
    """The tracer's settings at the end of the run, from the watcher's last
    line ("#### state current_tracer=irqsoff tracing_on=1 ..."); empty if
    the watcher did not write it."""
    for line in reversed(text.splitlines()):
        if line.startswith(STATE):
            return dict(f.split("=", 1) for f in line[len(STATE):].split() if "=" in f)
    return {}


def bound_ns(longest_line_bytes: int, char_ns: float, margin_ns: int = MARGIN_NS) -> int:
    """The series' promise: a CPU spends its interrupts-off time on its own
    line and at most one line of another CPU, plus the one wait. Both
    lines are counted as the longest line of the run, at the console's rate."""
    return int(2 * longest_line_bytes * char_ns) + margin_ns
