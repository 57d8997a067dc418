"""Named properties of a run's evidence (rig.evidence.boot, parsed once).

Every property is a check of an Evidence that returns a Check: the
property's name, whether it holds, and the evidence (where in the log, which
run directory). The boot properties every run must have (catalogue S1) are
listed by S1, `rig boot` and the report; the scenarios assert the others
with assert_NAME, which fails with the check's message, property first.
"""
import functools
import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, List, Optional, Tuple

from rig.evidence import crash, latency, logparse
from rig.evidence.boot import Evidence
from rig.evidence.logread import file_lines
from rig.evidence.uartlog import MarkerError
from rig.evidence.wire import (foreign_byte, ier_problem, inside, line_latency, marker,
                               own_wire_ns, printed_by, programmed_format, windows)
from rig.protocol import (MARK_AFTER, MARK_BEFORE, MARK_DEADLINE, MARK_NMI_ENTER, MARK_NMI_EXIT,
                          MARK_RUN_BEGIN)
from rig.rigprintk import Tag, parse_tag


# A stack trace without a headline rig.evidence.crash knows is still a splat.
TRACE_RE = re.compile(r"\bCall [Tt]race:|------------\[ cut here \]------------")


@dataclass
class Check:
    prop: str
    ok: bool
    detail: str
    measured: bool = True    # False: the evidence had nothing to judge it by

    def __str__(self) -> str:
        return f"{'PASS' if self.ok else 'FAIL'} {self.prop}: {self.detail}"

    @property
    def message(self) -> str:
        """The property first, then the evidence: a failure message."""
        return f"{self.prop}: {self.detail}" if self.detail else self.prop


def failed(message: str) -> Check:
    """A Check that does not hold, from a message that names the property in
    its first words ("PROPERTY: evidence")."""
    prop, _, detail = message.partition(": ")
    return Check(prop, False, detail)


def named(prop: str):
    """A property check of the evidence: the function returns failed(...)
    where the property does not hold, and nothing where it holds."""
    def wrap(fn):
        @functools.wraps(fn)
        def check(*args, **kwargs) -> Check:
            return fn(*args, **kwargs) or Check(prop, True, "holds")
        return check
    return wrap


def holds(check: Check) -> None:
    """A scenario's assertion of a property: fails with the check's message."""
    if not check.ok:
        raise AssertionError(check.message)


def asserting(check):
    """The assertion form of a property check, for the scenarios."""
    @functools.wraps(check)
    def assert_it(*args, **kwargs) -> None:
        holds(check(*args, **kwargs))
    return assert_it


def console_text(ev) -> Iterable[str]:
    """The run's console lines (run_console_lines of its boot's result)."""
    return run_console_lines(ev.result)


def run_console_lines(result) -> Iterable[str]:
    """A boot's console lines, streamed from its console.log (a console of
    any size), or split from the result's bytes when it has no run directory."""
    run = getattr(result, "run", None)
    if run is not None and run.console_log.is_file():
        return file_lines(run.console_log)
    return logparse.split_lines(result.console)


def booted_to_init(ev: Evidence) -> Check:
    ok = any("rig-init: start" in line for line in console_text(ev))
    return Check("boots to init", ok, "rig-init started" if ok else
                 "no 'rig-init: start' line on the console")


def console_lines_parse(ev: Evidence) -> Check:
    """From the parsed transcript, or, for a reader that did not parse it (a
    report of a long run), from one streamed pass over the console."""
    t = ev.transcript
    if t is None:
        kinds = Counter()
        unparsed = []
        for kind, line in logparse.transcript_events(console_text(ev)):
            kinds[kind] += 1
            if kind == "unparsed" and len(unparsed) < 5:
                unparsed.append(line)
        lines, firmware, n_unparsed = kinds["line"], kinds["firmware"], kinds["unparsed"]
    else:
        lines, firmware, n_unparsed = len(t.lines), len(t.firmware), len(t.unparsed)
        unparsed = t.unparsed[:5]
    if not lines:
        return Check("console lines parse", False, "no kernel line on the console at all")
    if n_unparsed:
        bad = "; ".join(f"line {ln.lineno}: {ln.raw[:100]!r}" for ln in unparsed)
        return Check("console lines parse", False,
                     f"{n_unparsed} of {lines + n_unparsed} kernel lines "
                     f"do not parse: {bad}")
    return Check("console lines parse", True, f"{lines} kernel lines parsed "
                 f"({firmware} firmware lines before the kernel)")


def no_splat(ev: Evidence) -> Check:
    found = next(crash.find_in(console_text(ev)), None)
    if found:
        return Check("no WARN/BUG/lockdep splat", False,
                     f"{found.title} (console line {found.lineno}: {found.headline[:120]!r})")
    for lineno, line in enumerate(console_text(ev), 1):
        if TRACE_RE.search(line):
            return Check("no WARN/BUG/lockdep splat", False,
                         f"backtrace at console line {lineno}: {line[:120]!r}")
    return Check("no WARN/BUG/lockdep splat", True, "none found")


# Reports of a lock or sleep in the wrong context, whatever the scenario: the
# crash kinds (rig.evidence.crash) lockdep, the debug checks and RCU give
# them, and lockdep's own WARNINGs that have no kind of their own.
LOCK_REPORT = "no lockdep, atomic-context or RCU report"
LOCK_REPORT_KINDS = ("lockdep", "atomic sleep", "RCU stall", "preemption", "spinlock")
LOCKDEP_WARNING_RE = re.compile(
    r"^(?:WARNING|BUG): (?:bad unlock balance|held lock freed|lock held when returning "
    r"to user space|nested lock was not taken|bad contention|lock held at task exit|"
    r"MAX_LOCKDEP_\w+ too low|Invalid wait context)")


@dataclass(frozen=True)
class UpstreamReport:
    """A report a run can provoke in code outside printk and the console
    drivers, on either flavor: its title and the frames its stack must hold
    in this order, so that only that report is left aside."""
    title: str
    frames: Tuple[str, ...]
    why: str


UPSTREAM_REPORTS = (
    # The test module's panic in NMI (test_module.py, S10) on the debug
    # profile: when the NMI came in while its CPU was inside lockdep,
    # lockdep checks the NMI's locks and finds x86's stop of the other CPUs
    # registering its NMI handler under nmi_desc's spinlock, in NMI.
    UpstreamReport("inconsistent lock state in __register_nmi_handler",
                   ("__register_nmi_handler", "native_stop_other_cpus", "vpanic"),
                   "x86's panic() from NMI takes nmi_desc's lock (arch/x86/kernel/nmi.c)"),
    # The debug profile's irqsoff tracer reporting an NMI handler's
    # interrupts-off stretch at the NMI's exit takes its own max_trace_lock
    # in NMI. The stretch itself is judged by console_stretches.
    UpstreamReport("inconsistent lock state in stop_critical_timing",
                   ("stop_critical_timing", "tracer_hardirqs_on", "irqentry_nmi_exit"),
                   "the irqsoff tracer takes max_trace_lock in NMI to report a long NMI "
                   "handler (kernel/trace/trace_irqsoff.c); the stretch is judged on its own"),
)


def upstream_report(found: crash.Crash) -> Optional[UpstreamReport]:
    for known in UPSTREAM_REPORTS:
        frames = iter(found.frames)
        if found.title == known.title and all(f in frames for f in known.frames):
            return known
    return None


def no_lock_report(lines: Iterable[str], where: str = "") -> Check:
    """No lockdep report, sleep or preemption in atomic context, spinlock
    debug report or RCU warning anywhere on the console: on the debug
    profile each lock's context is checked, on rt a sleeping lock in atomic
    context is a real bug. The first one names the failure. A report of
    UPSTREAM_REPORTS is named in the verdict and left aside."""
    aside = []
    for found in crash.find_in(lines):
        if found.kind in LOCK_REPORT_KINDS or LOCKDEP_WARNING_RE.match(found.headline):
            known = upstream_report(found)
            if known:
                aside.append(f"{found.title} at console line {found.lineno}: {known.why}")
                continue
            return Check(LOCK_REPORT, False,
                         f"{found.title} (console line {found.lineno}: "
                         f"{found.headline[:120]!r}){' ' + where if where else ''}")
    return Check(LOCK_REPORT, True, "none found" if not aside else
                 f"none of printk's; left aside, not printk's: {'; '.join(aside)}")


KMSG_CONTIGUOUS = "/dev/kmsg seq contiguous from 0"


def kmsg_contiguous(ev: Evidence) -> Check:
    prop = KMSG_CONTIGUOUS
    if ev.unreadable:
        return Check(prop, False, "; ".join(ev.unreadable.values()))
    for name in ("kmsg", "kmsg-meta"):
        if name not in ev.side.sections:
            return Check(prop, False, f"side channel has no section {name!r} (sections: "
                         f"{', '.join(sorted(ev.side.sections)) or 'none'}; status: "
                         f"{ev.side.status})")
    records, meta = ev.kmsg, ev.side.section("kmsg-meta").decode()
    if not records:
        return Check(prop, False, "the /dev/kmsg dump holds no record")
    seqs = [r.seq for r in records]
    if seqs[0] != 0:
        return Check(prop, False, f"first record has seq {seqs[0]}, not 0 ({meta.strip()})")
    for prev, cur in zip(seqs, seqs[1:]):
        if cur != prev + 1:
            return Check(prop, False, f"seq jumps from {prev} to {cur} ({meta.strip()})")
    return Check(prop, True, f"{len(records)} records, seq 0..{seqs[-1]} ({meta.strip()})")


def exit_clean(ev: Evidence) -> Check:
    oc = ev.result.outcome
    return Check("exit class is clean", oc.cls == "clean",
                 f"{oc.cls}: {oc.detail.splitlines()[0]}")


def boot_checks(ev: Evidence) -> List[Check]:
    """Catalogue S1: the properties every boot must have; and on a kernel
    with the latency tracer, the stretches it measured."""
    checks = [booted_to_init(ev), console_lines_parse(ev), no_splat(ev),
              kmsg_contiguous(ev), exit_clean(ev)]
    stretches = console_stretches(ev)
    return checks + [stretches] if stretches.measured else checks


@named("emergency immediacy")
def immediate(ev: Evidence, line, tag: Tag):
    """Every byte of the line (and its CRLF) went out during the printk() call,
    written by the calling CPU (by the CPUs it ran on, when it moved)."""
    during, cpus = ev.call(tag)
    wire = (line.raw + "\r\n").encode()
    written = bytes(r.value for r in during)
    if wire not in written:
        return failed(
            f"emergency immediacy on {ev.console_name}: line not written during its printk() "
            f"call: {line.raw!r}; "
            f"{len(written)} bytes went out between the markers ({ev.where()})")
    # A printer that had begun the record may have written all but its
    # newline before the caller took the console over: that fragment plus the
    # caller's newline reads as the line too. The caller's own copy follows
    # the replay line.
    copies, start = [], written.find(wire)
    while start >= 0:
        copies.append({r.cpu for r in during[start:start + len(wire)]})
        start = written.find(wire, start + 1)
    if not any(copy <= cpus for copy in copies):
        return failed(
            f"emergency immediacy on {ev.console_name}: the line's bytes "
            f"came from vCPUs {copies[0]}, the caller ran on CPU "
            f"{' and '.join(map(str, sorted(cpus)))} ({ev.where()})")


@named("emergency threshold")
def deferred(ev: Evidence, line, tag: Tag):
    written = bytes(r.value for r in ev.during_call(tag))
    if (line.raw + "\r\n").encode() in written:
        return failed(
            f"emergency threshold: line written during its printk() call although it is not "
            f"an emergency: {line.raw!r} ({ev.where()})")
    if line not in ev.transcript.lines:
        return failed(
            f"emergency threshold: the line is not a console "
            f"line of this run: {line.raw!r} ({ev.where()})")


def single(ev: Evidence, scen: str):
    found = ev.tagged(scen)
    assert len(found) == 1, (f"records once: {scen}'s line is on the console {len(found)} "
                             f"times, not once ({ev.where()})")
    return found[0]


@named("IER restored")
def ier_restored(ev: Evidence):
    """Console writes clear IER and restore what they found, however they nest
    (rig.evidence.wire.ier_problem), from the run's start on."""
    begin = marker(ev.log, MARK_RUN_BEGIN)
    if begin is None:
        return failed(
            f"no run-begin marker in the register log ({ev.where()})")
    problem = ier_problem(ev.log, begin.seq)
    if problem is not None:
        return failed(
            f"IER restored: {problem} ({ev.where()})")


@named("emergency contiguity")
def contiguous(ev: Evidence, line, cpu: int):
    """The line is on the wire whole, and every byte of its text came from cpu."""
    wl = ev.wire_line_of(line)
    if wl is None:
        return failed(
            f"emergency contiguity: line {line.lineno} not found whole on the "
            f"wire: {line.raw!r} ({ev.where()})")
    stray = foreign_byte(wl, cpu)
    if stray is not None:
        return failed(
            f"emergency contiguity: line from cpu{cpu} interleaved with a byte from vCPU "
            f"{stray.cpu} at log record {stray.seq}: {line.raw!r} ({ev.where()})")


@named("emergency line writer")
def written_by_its_cpu_or_handed(ev: Evidence, line, cpu: int, may_hand: bool):
    """The emergency line is whole on the wire and every byte of its text came
    from one vCPU: cpu's own, or, for a record printed where the caller must
    not wait for another CPU (NMI, interrupts off: may_hand), the emergency
    writer it was handed to, which writes it right after a line of its own
    (kernel-patches/DESIGN.md, "Contention")."""
    wl = ev.wire_line_of(line)
    if wl is None:
        return failed(
            f"line {line.lineno} not found whole on the wire: {line.raw!r} "
            f"({ev.where()})")
    if foreign_byte(wl, cpu) is None:
        return
    before = [w for w in ev.wire if w.last.seq < wl.first.seq]
    handed = (may_hand and len(wl.body_cpus) == 1 and before
              and before[-1].body_cpus == wl.body_cpus)
    if not handed:
        return failed(
            f"emergency line writer: the line from cpu{cpu} was written by vCPUs "
            f"{sorted(wl.body_cpus)}, neither by its own CPU alone nor, handed over, right "
            f"after the writer's own line: "
            f"{line.raw!r} ({ev.where()})")


@named("printer-thread liveness")
def printed_by_deadline(ev: Evidence, tagged, quiet_ms: int,
                               printer_cpu: Optional[int]):
    """Printer-thread liveness: every tagged line is whole on the wire before
    the module's deadline marker, which it writes after quiet_ms in which
    nothing printed; init's end-of-run flush and later printk() calls come
    after the marker. And the printer thread, pinned to printer_cpu, wrote
    the first of them: a CPU left in an emergency section flushes the
    consoles itself whenever it prints (6.12's rule for emergency sections),
    which may take over from the printer later but must not stand in for a
    printer that never ran. printer_cpu None: a kernel without a printer."""
    deadline = marker(ev.log, MARK_DEADLINE)
    if deadline is None:
        return failed(
            f"no deadline marker in the register log ({ev.where()})")
    wires = [(line, ev.wire_line_of(line)) for line, _ in tagged]
    late = [(line, wl) for line, wl in wires if wl is None or wl.last.seq > deadline.seq]
    if late:
        line, wl = late[0]
        how = ("never whole on the wire" if wl is None else
               f"its last byte written by vCPU {wl.last.cpu} at log record {wl.last.seq}, "
               f"{(wl.last.vtime_ns - deadline.vtime_ns) / 1e6:.1f} ms after the deadline")
        return failed(
            f"printer-thread liveness: {len(late)} of {len(tagged)} lines were not printed "
            f"within {quiet_ms} ms of quiet (deadline marker at log record {deadline.seq}); "
            f"first: console line {line.lineno} {line.raw!r}, {how} ({ev.where()})")
    if printer_cpu is None or not wires:
        return
    line, wl = min(wires, key=lambda lw: lw[1].first.seq)
    if wl.body_cpus != {printer_cpu}:
        return failed(
            f"printer-thread liveness: the printer thread on CPU {printer_cpu} did not print: the "
            f"first of the {len(tagged)} lines, console line {line.lineno} {line.raw!r}, was "
            f"written by vCPU {sorted(wl.body_cpus)} from log record {wl.first.seq} "
            f"({ev.where()})")


def call_windows(ev: Evidence):
    """The module's printk() calls, from its before marker to its after marker
    on the same vCPU (made with interrupts off by flood_irqsoff)."""
    return windows(ev.log, lambda v: v >> 28 == MARK_BEFORE,
                   lambda v: (MARK_AFTER << 28) | (v & 0x0FFFFFFF))


def nmi_windows(ev: Evidence):
    """Each vCPU's time in NMI handlers (the module's nmi_markers)."""
    return windows(ev.log, lambda v: v == MARK_NMI_ENTER, lambda v: MARK_NMI_EXIT)


# A writer polls the transmitter between bytes, so writing takes a little
# longer than the bytes' wire time: up to this share of it is writing too.
WRITE_SLACK = 0.05


@named("interrupts-off wait")
def no_irqsoff_wait(ev: Evidence, wins, bound_ms: float, nmis=()):
    """Interrupts-off waits: in no window with interrupts off does a CPU spend
    more than bound_ms beyond the wire time of the bytes it wrote itself of
    lines it printed (writing them is the work it is there for; waiting for
    others, or writing their lines, is not). Time in the NMI handlers of nmis
    is the NMI's, not the call's: it is left out, with the bytes written in it."""
    if not wins:
        return failed(
            f"no interrupts-off window was marked in the register log ({ev.where()})")
    fmt = programmed_format(ev.log)
    printers = printed_by(ev.wire)
    in_nmi = {w: inside(w, nmis) for w in wins}
    own = {w: own_wire_ns(ev.log, w, fmt, in_nmi[w], printers) for w in wins}
    spent = {w: w.ns - sum(n.ns for n in in_nmi[w]) for w in wins}
    worst = max(wins, key=lambda w: spent[w] - own[w] * (1 + WRITE_SLACK))
    waited = (spent[worst] - own[worst]) / 1e6
    nmi_ms = (worst.ns - spent[worst]) / 1e6
    if spent[worst] - own[worst] * (1 + WRITE_SLACK) > bound_ms * 1e6:
        return failed(
            f"interrupts-off wait: CPU {worst.cpu} waited {waited:.1f} ms with interrupts off in "
            f"a printk() call of {worst.ns / 1e6:.1f} ms ({nmi_ms:.1f} ms of it in NMI), beyond "
            f"the {own[worst] / 1e6:.1f} ms its own lines took on the wire (bound {bound_ms} ms + "
            f"{WRITE_SLACK:.0%} of those; log records {worst.begin.seq}-{worst.end.seq}, "
            f"{len(wins)} windows) ({ev.where()})")


CONSOLE_STRETCH = "interrupts-off stretch in console code"
# Side section "latency-status": the watcher's exit status, 0 when it
# recorded until the end.
WATCHER_OK = "0"


def console_stretches(ev: Evidence) -> Check:
    """Interrupts-off stretch in console code, over the whole run: no
    stretch the kernel's latency tracer reported that began or ended in
    printk, nbcon or the 8250 console (or was ended from code they called)
    is longer than the design's bound, latency.bound_ns: the CPU's own line
    and one line of another CPU at the console's rate, plus the one
    friendly-handover wait. Not measured on a kernel without the tracer
    (only the debug profile has it) or a run that ended before rig-init
    sent the tracer's reports (a panic)."""
    prop = CONSOLE_STRETCH
    if "latency-status" not in ev.side.sections or ev.log is None:
        return Check(prop, True, "not measured: the run has no latency tracer's reports",
                     measured=False)
    status = ev.side.section("latency-status").decode().strip()
    if status != WATCHER_OK:
        if "latency" not in ev.side.sections:
            return Check(prop, False, f"the latency tracer did not start: {status} ({ev.where()})")
        return Check(prop, False, f"the guest's latency watcher ended with status {status!r}, "
                                  f"so stretches may be missing ({ev.where()})")
    text = ev.side.section("latency").decode("utf-8", "replace")
    settings = latency.state(text)
    if settings.get("current_tracer") in (None, "nop") or "tracing_thresh" not in settings:
        return Check(prop, False, f"the latency tracer was not set up at the end of the run "
                                  f"(state {settings or 'missing'}) ({ev.where()})")
    stretches = latency.parse(text)
    latency.name_nmi_handlers(stretches, console_text(ev))
    longest = max((len(line) for line in console_text(ev)), default=0)
    bound = latency.bound_ns(longest, programmed_format(ev.log).char_ns)
    if settings.get("current_tracer") != "irqsoff":
        bound += latency.PREEMPT_WAIT_NS
    thresh_ns = int(settings["tracing_thresh"]) * 1000
    console = [(s, s.console_function()) for s in stretches]
    console = [(s, fn) for s, fn in console if fn]
    what = (f"{len(stretches)} stretches of {thresh_ns / 1e6:.1f} ms or more reported, "
            f"{len(console)} in console code; bound {bound / 1e6:.1f} ms (two {longest}-byte "
            f"lines + {latency.MARGIN_NS / 1e6:.0f} ms)" +
            (", shorter than the tracer's threshold: a stretch between the two is not seen"
             if bound < thresh_ns else "") +
            # oops_enter() turns tracing off: the oops's own output is not measured.
            ("; tracing was turned off during the run (an oops does), measured until then"
             if settings.get("tracing_on") != "1" else ""))
    if not console:
        return Check(prop, True, what)
    worst, fn = max(console, key=lambda c: c[0].us)
    if worst.us * 1000 > bound:
        return Check(prop, False, f"{worst.describe()}, in {fn}: {worst.us / 1000:.1f} ms of "
                                  f"virtual time, over the bound; {what} ({ev.where()})")
    return Check(prop, True, f"longest {worst.us / 1000:.1f} ms ({worst.describe()}); {what}")


LOCKUP_RE = re.compile(r"soft lockup|hard LOCKUP|detected stalls? on CPU|self-detected stall|"
                       r"blocked for more than \d+ seconds")


@named("no lockup report")
def no_lockup_report(ev: Evidence):
    """No soft-lockup, hard-lockup, RCU-stall or hung-task report on the console."""
    hit = next((ln for ln in ev.transcript.lines if LOCKUP_RE.search(ln.raw)), None)
    if hit is not None:
        return failed(
            f"lockup report: console line {hit.lineno}: {hit.raw!r} "
            f"({ev.where()})")


@named("8250 after a takeover")
def ousted_writer_keeps_off(ev: Evidence, expect_takeover: bool):
    """The 8250 after a takeover: a console writer that lost the console to
    another CPU does not touch the UART while the new owner writes, not even
    to poll LSR (rig.evidence.takeover). expect_takeover: the scenario is built to
    make one, so none at all is a broken setup. Judged from the module's
    run-begin marker on: before it, the tty layer sets IER too."""
    begin = marker(ev.log, MARK_RUN_BEGIN)
    if begin is None and not expect_takeover:
        return
    if begin is None:
        return failed(
            f"no run-begin marker in the register log ({ev.where()})")
    found = ev.takeovers(begin.seq)
    bad = [t for t in found if t.stray is not None]
    if bad:
        t = bad[0]
        end = (f"log record {t.ended.seq}" if t.ended else "never")
        kind = "read" if t.stray.is_read else "write"
        return failed(
            f"8250 after a takeover: vCPU {t.ousted_cpu} touched the UART after vCPU "
            f"{t.taker.cpu} took the console over: {t.stray.reg} {kind} at log record "
            f"{t.stray.seq}, {(t.stray.vtime_ns - t.taker.vtime_ns) / 1e3:.1f} us after the "
            f"takeover at log record {t.taker.seq}; the new owner's write ended: {end} "
            f"({len(bad)} of {len(found)} takeovers) ({ev.where()})")
    if not (found or not expect_takeover):
        return failed(
            f"S22 setup: no console write of one vCPU was taken over by another "
            f"({ev.where()})")


def printed_records(ev: Evidence):
    """The console lines that are records: the console's own notes (a replay
    after a takeover, a dropped count) are not."""
    return [ln for ln in ev.transcript.lines if ln.dropped is None and not ln.replay]


def console_record_lines(ev: Evidence, levels, cpu: Optional[str] = None):
    """The lines the console must show for the /dev/kmsg dump's records of
    the given levels (and of that CPU field, if given): (record seq, text),
    a record of several lines as several."""
    return [(r.seq, line) for r in ev.kmsg
            if r.level in levels and (cpu is None or record_cpu(r) == cpu)
            for line in r.text.split("\n")]


def record_cpu(record) -> Optional[str]:
    """A /dev/kmsg record's CPU field (the patched kernel's fifth field)."""
    return record.extra[0] if record.extra and record.extra[0].isdigit() else None


@named("records once and in order")
def records_once_in_order(ev: Evidence, console_loglevel: int = 7,
                                 overtaking_below: int = 0, from_seq: int = 0,
                                 to_seq: Optional[int] = None):
    """Every record of the /dev/kmsg dump that the console must print is on
    it exactly once, from record from_seq on (up to, not including, to_seq
    where the transcript was taken before the end), with no gap or duplicate
    (the console's own replay and dropped lines aside), in the dump's order.
    The emergency records (levels below overtaking_below) overtake the
    backlog, each written by its own CPU: they are in order among those of
    their CPU."""
    have = printed_records(ev)
    emergency = range(overtaking_below)
    groups = [(emergency, cpu) for cpu in sorted({record_cpu(r) for r in ev.kmsg
                                                  if r.level in emergency}, key=str)]
    groups.append((range(overtaking_below, console_loglevel), None))
    for levels, cpu in groups:
        want = [(seq, text) for seq, text in console_record_lines(ev, levels, cpu)
                if seq >= from_seq and (to_seq is None or seq < to_seq)]
        texts = {text for _, text in want}
        mine = [ln for ln in have if ln.text in texts]
        problem = first_out_of_place(want, mine)
        of_cpu = f", CPU {cpu}" if cpu is not None else ""
        if problem is not None:
            return failed(
                f"records once and in order on {ev.console_name}: {problem} ({len(want)} lines "
                f"of levels {levels.start}-{levels.stop - 1}{of_cpu}) ({ev.where()})")


def first_out_of_place(want, have) -> Optional[str]:
    """Where the console lines have differ from the wanted (seq, text)s, or None."""
    for i, (seq, text) in enumerate(want):
        got = have[i] if i < len(have) else None
        if got is not None and got.text == text:
            continue
        if got is None:
            how = "the console ends before it"
        elif i and got.text == want[i - 1][1]:
            how = f"console line {got.lineno} repeats the record before it: {got.raw!r}"
        elif any(ln.text == text for ln in have[i + 1:]):
            how = f"console line {got.lineno} comes first: {got.raw!r}"
        else:
            how = f"it is not on the console; console line {got.lineno} is {got.raw!r}"
        return f"record seq {seq} {text!r} (line {i + 1}): {how}"
    return None


def waiting_behind(ev: Evidence, scen: str, line, tag: Tag) -> int:
    """How many of scen's records, stored before the tagged call (stamp=1
    gives each its call time), the console printed after line: the backlog
    the line overtook."""
    tagged = ev.tagged(scen)
    pos = next(i for i, (ln, _) in enumerate(tagged) if ln.lineno == line.lineno)
    return sum(t.t_call_ns < tag.t_call_ns for _, t in tagged[pos + 1:])


@named("emergency ordering")
def overtakes_backlog(ev: Evidence, scen: str, line, tag: Tag, at_least: int,
                      what: str = "ERR line"):
    """At least at_least older records of scen were still waiting when the
    line went out: it did not wait its turn behind the backlog."""
    waiting = waiting_behind(ev, scen, line, tag)
    if waiting < at_least:
        return failed(
            f"emergency ordering: the {what} came after the backlog: only {waiting} "
            f"older INFO lines "
            f"were printed after it ({ev.where()})")
    return Check("emergency ordering", True, f"{waiting} older INFO lines were printed "
                 f"after it")


def call_latency(ev: Evidence, line, tag: Tag):
    """From the tagged printk() call (its before-marker) to the line's last
    bit on the wire, against the line's own wire time; None when the line
    is not whole on the wire."""
    wl = ev.wire_line_of(line)
    if wl is None:
        return None
    before = marker(ev.log, tag.marker(MARK_BEFORE), cpu=tag.cpu)
    if before is None:
        raise MarkerError(f"no marker {tag.marker(MARK_BEFORE):#x} from vCPU {tag.cpu} "
                          f"({ev.where()})")
    return line_latency(ev.log, wl, since_ns=before.vtime_ns)


@named("emergency latency")
def emergency_latency(ev: Evidence, line, tag: Tag, bound: float, what: str = "ERR line"):
    """The emergency line's last bit leaves the wire within bound times its
    own wire time (at the rate the guest programmed) after its printk()
    call: it waited for nothing but its own bytes."""
    lat = call_latency(ev, line, tag)
    if lat is None:
        return failed(f"emergency contiguity: the {what} is not whole on the wire "
                      f"({ev.where()})")
    if lat.ratio > bound:
        return failed(
            f"emergency latency: the {what}'s last bit left the wire {lat.ns / 1e6:.3f} ms "
            f"after the call, "
            f"{lat.ratio:.2f}x the {lat.physical_ns / 1e6:.3f} ms its {lat.line_bytes} bytes "
            f"take at the programmed rate (bound {bound}x) ({ev.where()})")
    return Check("emergency latency", True,
                 f"{lat.ns / 1e6:.3f} ms from the call to the last bit, {lat.ratio:.3f}x the "
                 f"{lat.physical_ns / 1e6:.3f} ms its {lat.line_bytes} bytes take "
                 f"(bound {bound}x)")


@named("emergency mid-line")
def interrupted_by(ev: Evidence, victim: str, line):
    """The emergency line cut the line holding victim short: the fragment,
    then the emergency line, then the victim's record whole (after nbcon's
    replay line)."""
    pairs = [(frag, whole) for frag, whole in ev.transcript.interrupted if victim in whole.raw]
    if not pairs:
        return failed(f"emergency mid-line: no interrupted fragment of the victim line "
                      f"followed by its replay "
                      f"({ev.where()})")
    frag, whole = pairs[0]
    if not frag.lineno < line.lineno < whole.lineno:
        return failed(
            f"order on the console: fragment line {frag.lineno}, emergency line "
            f"{line.lineno}, whole line {whole.lineno} ({ev.where()})")
    if len(frag.raw) >= len(whole.raw):
        return failed("the fragment is the whole line")


@named("boot console")
def boot_console_prints_when_stored(ev: Evidence, real_console: str,
                                    bound_ms: float) -> Check:
    """A boot console prints each record when it is stored: it is the only
    way out before the real console (and any printer thread) exists. Each
    record stored before the real_console line, once the clock runs, starts
    on the wire no later than bound_ms after its timestamp, measured against
    the record that got there fastest (the guest clock's offset from the
    register log's virtual time). Not measured (Check.measured) when no
    early record has a timestamp: the clock started only after the real
    console (a TSC calibration that fell back to a slower reference, on a
    busy host)."""
    real = next((ln for ln in ev.transcript.lines if real_console in ln.raw), None)
    if real is None:
        return failed(
            f"boot console: no {real_console!r} line ({ev.where()})")
    lags = []
    for line in ev.transcript.lines:
        wl = ev.wire_line_of(line)
        if wl is not None and line.ts_usec:
            lags.append((line, wl, wl.first.vtime_ns - line.ts_usec * 1000))
    early = [x for x in lags if x[0].lineno < real.lineno]
    if not early:
        return Check("boot console", True, f"no record before {real_console!r} has a "
                     f"timestamp ({ev.where()})", measured=False)
    offset = min(lag for _, _, lag in lags)
    line, wl, lag = max(early, key=lambda x: x[2])
    late_ms = (lag - offset) / 1e6
    if late_ms > bound_ms:
        return failed(
            f"boot console: console line {line.lineno} {line.raw!r} reached the wire "
            f"{late_ms:.1f} ms after it was stored (bound {bound_ms} ms), at log record "
            f"{wl.first.seq}: the boot console did not print it when it was stored, but "
            f"later ({len(early)} records before {real_console!r}) ({ev.where()})")
    return Check("boot console", True, f"{len(early)} records before {real_console!r} on "
                 f"the wire within {bound_ms} ms of their timestamps")


@named("CPU tagging")
def export_tagged(ev: Evidence, export: str, scen: str, count: int):
    """Every record scen tagged is in the text export (a side-channel
    section) once, with the CPU field of the CPU the module printed it on."""
    raws = logparse.split_lines(ev.side.section(export))
    lines = [ln for i, raw in enumerate(raws, 1)
             for ln in [logparse.parse_console_line(i, raw)] if ln is not None]
    mine = [(ln, t) for ln in lines for t in [parse_tag(ln.text)] if t and t.scen == scen]
    if len(mine) != count:
        return failed(f"CPU tagging: {export} holds {len(mine)} of the {count} tagged "
                      f"records ({len(raws)} lines; {ev.where()})")
    for ln, t in mine:
        if ln.cpu != t.cpu:
            return failed(f"CPU tagging: {export} line {ln.lineno} says CPU {ln.cpu}, "
                          f"the module printed it on CPU {t.cpu}: {ln.raw!r} "
                          f"({ev.where()})")


@named("panic on the wire")
def panic_complete(ev: Evidence, panic: str):
    """The panic message, a backtrace with the NMI context, and the last
    panic notifier's line (the kernel offset; panic=-1 reboots right after)
    are on the wire, in that order."""
    texts = [ln.text for ln in ev.transcript.lines]
    start = next((i for i, t in enumerate(texts) if panic in t), None)
    if start is None:
        return failed(f"panic on the wire: no panic message on the wire ({ev.where()})")
    end = next((i for i, t in enumerate(texts) if i > start and t.startswith("Kernel Offset:")),
               None)
    if end is None:
        return failed(
            f"the panic output is cut short: no 'Kernel Offset:' line after the panic message "
            f"({ev.where()})")
    between = texts[start:end]
    if not any("Call Trace:" in t for t in between):
        return failed("no backtrace between panic and its end")
    if not any("<NMI>" in t for t in between):
        return failed("the backtrace does not show the NMI context")


@named("panic timeout")
def last_line_whole(ev: Evidence, text: str, panic: str):
    """text is the last line the console printed after the panic message,
    and it is whole on the wire."""
    lines = printed_records(ev)
    start = next(i for i, ln in enumerate(lines) if panic in ln.text)
    tail = [ln.text for ln in lines[start:]]
    if text not in tail:
        return failed(f"panic timeout: {text!r} never reached the console after the panic; "
                      f"its last lines: {tail[-3:]} ({ev.where()})")
    if tail[-1] != text:
        return failed(f"panic timeout: {text!r} is not the panic's last line, "
                      f"{tail[-1]!r} is ({ev.where()})")
    if ev.wire_line_of(lines[-1]) is None:
        return failed(f"panic timeout: {text!r} is not whole on the wire ({ev.where()})")


@named("history for a new console")
def history_with_exact_dropped_count(ev: Evidence, lines, console: str, scen: str,
                                     count: int):
    """A console registered after scen's flood of count records (from CPU
    0, the only writer) wrapped the ringbuffer: its lines start with a
    dropped count equal to the first record's seq, then the flood's
    history in order, every gap counted by a dropped line in front of the
    next record, up to the last record."""
    first = logparse.parse_console_line(1, lines[0]) if lines else None
    if first is None or not first.dropped:
        return failed(
            f"history for a new console: the first line of {console} is not a dropped "
            f"count: {lines[:1]!r} ({ev.where()})")
    seqs = [t.seq for t in (parse_tag(ln) for ln in lines) if t and t.scen == scen]
    if not seqs:
        return failed(
            f"history for a new console: no flood record on {console} ({ev.where()})")
    # The flood is the only writer, so its records have consecutive ringbuffer
    # seqs: one record in the later /dev/kmsg dump gives the seq of any other.
    anchor = next((r, t) for r in ev.kmsg for t in [parse_tag(r.text)] if t and t.scen == scen)
    first_seq = anchor[0].seq - (anchor[1].seq - seqs[0])
    if first.dropped != first_seq:
        return failed(
            f"history for a new console: {console} says {first.dropped} records were dropped, "
            f"but the first record it got, cpu0#{seqs[0]}, has seq {first_seq}: the count is "
            f"off by {first.dropped - first_seq} ({ev.where()})")
    # While the console prints the history, the records stored meanwhile
    # may overwrite the oldest it has not reached yet: such a gap must be
    # counted by the dropped line in front of the next record.
    expect, pending = seqs[0], 0
    for raw in lines[1:]:
        line = logparse.parse_console_line(0, raw)
        if line is not None and line.dropped:
            pending += line.dropped
            continue
        tag = parse_tag(raw)
        if not (tag and tag.scen == scen):
            continue
        if tag.seq != expect + pending:
            return failed(
                f"history for a new console: on {console}, cpu0#{tag.seq} follows "
                f"cpu0#{expect - 1} with {pending} records counted as dropped in between: "
                f"the flood's history is not complete, in order or accounted for "
                f"({ev.where()})")
        expect, pending = tag.seq + 1, 0
    if expect != count:
        return failed(
            f"history for a new console: the flood's history on {console} ends at "
            f"cpu0#{expect - 1}, not cpu0#{count - 1} ({ev.where()})")


# The scenarios assert the properties with these.
assert_immediate = asserting(immediate)
assert_deferred = asserting(deferred)
assert_ier_restored = asserting(ier_restored)
assert_contiguous = asserting(contiguous)
assert_written_by_its_cpu_or_handed = asserting(written_by_its_cpu_or_handed)
assert_printed_by_deadline = asserting(printed_by_deadline)
assert_no_irqsoff_wait = asserting(no_irqsoff_wait)
assert_no_lockup_report = asserting(no_lockup_report)
assert_ousted_writer_keeps_off = asserting(ousted_writer_keeps_off)
assert_console_stretches = asserting(console_stretches)
assert_records_once_in_order = asserting(records_once_in_order)
assert_export_tagged = asserting(export_tagged)
assert_panic_complete = asserting(panic_complete)
assert_last_line_whole = asserting(last_line_whole)
assert_history_with_exact_dropped_count = asserting(history_with_exact_dropped_count)
assert_emergency_latency = asserting(emergency_latency)
assert_interrupted_by = asserting(interrupted_by)
assert_overtakes_backlog = asserting(overtakes_backlog)
