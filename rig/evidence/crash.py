"""The kernel's crash headlines, found in any kernel log, each with a one-line
title the way syzkaller titles its reports ("WARNING in func", "KASAN:
use-after-free Read in func", "INFO: task hung in func").

A crash is known by its headline, the first line of the report, not by a
"Call Trace:" after it: a divide error, an RCU stall, a hung task, a lockdep
report, a SLUB or UBSAN report and arm64's "Call trace:" all have their own.
The function in a title comes from the report's RIP/pc line, or else from
the first frame of its stack trace that is not part of the reporting itself.

Used by S1's splat check (rig.evidence.properties), and by anyone with `rig.evidence.crash.find`.
"""
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, List, Optional, Tuple

from rig.evidence import logparse
from rig.evidence.window import windowed

BLOCK = 4096

# Lines after a headline searched for its function.
REPORT_LINES = 120

# syzkaller's caller field after the timestamp: "[  12.345678][ T1234] ".
CALLER_RE = re.compile(r"^\[\s*[TC]\d+\]\s?")

RIP_RE = re.compile(r"\b(?:RIP: [0-9a-f]{4}:|pc : |PC is at |IP: (?:\[<[0-9a-f]+>\] )?)"
                    r"(?:\[<[0-9a-f]+>\] )?([A-Za-z_][\w.]*)\+0x[0-9a-f]+")
FRAME_RE = re.compile(r"^\s*(?:\[<[0-9a-f]+>\]\s*)?(\?\s+)?([A-Za-z_][\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+")

# Frames of the reporting machinery, not of the code that crashed.
REPORTING = re.compile(
    r"^(?:__asan_\w+|dump_stack\w*|__dump_stack|show_stack|show_trace_log_lvl|show_regs|"
    r"print_\w+|__warn\w*|warn_\w+|report_bug|handle_bug|exc_\w+|asm_exc_\w+|"
    r"do_error_trap|do_trap|do_int3\w*|fixup_bug|die\w*|oops_\w+|__die\w*|panic\w*|"
    r"kasan_\w+|__kasan_\w+|kmsan_\w+|__msan_\w+|kfence_\w+|ubsan_\w+|__ubsan_\w+|"
    r"check_\w+|__check_\w+|lockdep_\w+|__lock_acquire|lock_acquire\w*|__lock_\w+|"
    r"validate_chain|mark_lock\w*|debug_\w+|_raw_\w+|do_raw_\w+|__raw_\w+|"
    r"spin_bug|spin_dump|refcount_\w+|__refcount_\w+|__might_\w+|might_\w+|"
    r"___might_\w+|rcu_\w+|print_circular_bug|nmi_\w+|watchdog_\w+|"
    r"__schedule_bug|schedule_debug|preempt_count_\w+|debug_smp_processor_id|"
    r"check_preemption_disabled|__this_cpu_preempt_check|object_err|slab_err|"
    r"slab_bug|__slab_err|__free_object|free_debug_processing|"
    r"kmemleak_\w+|ex_handler_\w+|fixup_exception|page_fault_oops|kernelmode_fixup_or_oops|"
    r"__bad_area\w*|bad_area\w*|do_user_addr_fault|handle_page_fault|"
    r"do_kern_addr_fault|__do_kernel_fault|do_page_fault|do_mem_abort|el1_\w+|"
    r"__schedule|schedule\w*|io_schedule\w*|hung_task_\w+|__switch_to\w*|context_switch|"
    r"sysvec_\w+|asm_sysvec_\w+|__sysvec_\w+|irq_exit\w*|__irq_exit_rcu|"
    r"bug_handler|__bug|do_bug)$")


@dataclass(frozen=True)
class Crash:
    lineno: int        # 1-based line of the headline
    headline: str      # the headline's text, prefix removed
    kind: str          # e.g. "WARNING", "KASAN", "INFO: task hung"
    title: str         # e.g. "WARNING in foo_bar"
    # The functions of the stack frames (not the "? " guesses) in the
    # REPORT_LINES after the headline, in order.
    frames: Tuple[str, ...] = ()


# Older kernels framed some headlines: "[ INFO: inconsistent lock state ]".
FRAMED_RE = re.compile(r"^\[ (.+?) \]$")


def texts_of(raw: str) -> List[str]:
    """The texts of the records a line holds: one, or several when a record
    was printed after other text on the same line."""
    raw = logparse.DECODE_RE.sub("", raw, count=1)
    # A record printed after other text on the same line: a login prompt, a
    # dropped marker, a line cut short by another CPU.
    cuts = [m.start() for m in logparse.TS_RE.finditer(raw) if m.start() > 0]
    return [text_of(part) for part in
            (raw[a:b] for a, b in zip([0] + cuts, cuts + [len(raw)])) if part.strip()]


def text_of(raw: str) -> str:
    """A record's text without the console, dmesg or syslog prefix."""
    m = logparse.CONSOLE_RE.match(raw)
    text = CALLER_RE.sub("", m.group("text") if m else raw, count=1).strip()
    framed = FRAMED_RE.match(text)
    return framed.group(1) if framed else text


def function_after(texts: List[str], start: int, rip_first: bool) -> Optional[str]:
    """The crashing function: the RIP/pc line (first when rip_first), else the
    first stack frame that is not the reporting machinery."""
    window = texts[start + 1:start + 1 + REPORT_LINES]
    if rip_first:
        for t in window:
            m = RIP_RE.search(t)
            if m:
                return m.group(1)
    for t in window:
        m = FRAME_RE.match(t)
        if m and not m.group(1) and not REPORTING.match(plain(m.group(2))):
            return plain(m.group(2))
    if not rip_first:
        for t in window:
            m = RIP_RE.search(t)
            if m:
                return m.group(1)
    return None


def plain(fn: str) -> str:
    """A function's name without the compiler's suffixes (foo.part.0, foo.cold)."""
    return re.sub(r"\.(?:part|isra|constprop|cold|lto_priv)(?:\.\d+)*$", "", fn)


def access_after(texts: List[str], start: int) -> str:
    """KASAN's access kind: 'Read' or 'Write' from the line after the headline."""
    for t in texts[start + 1:start + 4]:
        m = re.match(r"^(Read|Write) of size", t)
        if m:
            return f" {m.group(1)}"
    return ""


def _in(fn: Optional[str]) -> str:
    return f" in {fn}" if fn else ""


Titler = Callable[[re.Match, List[str], int], str]


def rip(kind: str) -> Titler:
    return lambda m, texts, i: kind + _in(function_after(texts, i, True))


def stack(kind: str) -> Titler:
    return lambda m, texts, i: kind + _in(function_after(texts, i, False))


def kasan(m: re.Match, texts: List[str], i: int) -> str:
    fn = m.group("fn") or function_after(texts, i, False)
    return f"{m.group('tool')}: {m.group('what')}{access_after(texts, i)}{_in(fn)}"


def warning(m: re.Match, texts: List[str], i: int) -> str:
    return "WARNING" + _in(m.group("fn") or function_after(texts, i, True))


# (headline pattern, kind, title). The first pattern that matches a line wins;
# specific ones come before general ones.
HEADLINES = [
    (r"^BUG: (?P<tool>KASAN|KFENCE|KMSAN|KCSAN): (?P<what>[\w-]+(?: (?!in\b)[\w-]+)?)"
     r"(?: in (?P<fn>[A-Za-z_][\w.]*))?", "sanitizer", kasan),
    (r"^UBSAN: (?P<what>[\w-]+) in ", "UBSAN", lambda m, t, i: f"UBSAN: {m.group('what')}"
     + _in(function_after(t, i, False))),
    (r"^UBSAN: Undefined behaviour in ", "UBSAN",
     lambda m, t, i: "UBSAN: undefined-behaviour" + _in(function_after(t, i, False))),
    (r"^WARNING: CPU: \d+ PID: \d+ at \S+ (?:(?P<fn>[A-Za-z_][\w.]*)\+0x)?", "WARNING", warning),
    (r"^(?:WARNING|INFO): (?:possible (?:circular|recursive|irq lock inversion) "
     r"(?:locking )?(?:dependency )?detected|[\w-]+-safe -> [\w-]+-unsafe lock order detected)",
     "lockdep", stack("possible deadlock")),
    (r"^(?:WARNING|INFO): inconsistent lock state", "lockdep", stack("inconsistent lock state")),
    (r"^(?:WARNING|INFO): suspicious RCU usage", "lockdep", stack("WARNING: suspicious RCU usage")),
    (r"^INFO: (?P<what>Freed|Allocated) in (?P<fn>[A-Za-z_][\w.]*)", "SLUB",
     lambda m, t, i: f"INFO: {m.group('what')} in {m.group('fn')}"),
    (r"^unregister_netdevice: waiting for \S+ to become free", "netdev",
     lambda m, t, i: "unregister_netdevice: waiting for DEV to become free"),
    (r"^WARNING: (?P<msg>.+?)(?: detected)?!?$", "WARNING",
     lambda m, t, i: f"WARNING: {m.group('msg')}" + _in(function_after(t, i, False))),
    (r"^(?:Oops: )?(?:[\w-]+ )?general protection fault", "general protection fault",
     rip("general protection fault")),
    (r"^(?:Oops: )?divide[ _]error", "divide error", rip("divide error")),
    (r"^(?:invalid opcode|kernel BUG at \S+)", "kernel BUG", rip("kernel BUG")),
    (r"^PANIC: double fault", "double fault", rip("PANIC: double fault")),
    (r"^BUG: (?:unable to handle kernel NULL pointer dereference|kernel NULL pointer "
     r"dereference)", "page fault",
     rip("BUG: unable to handle kernel NULL pointer dereference")),
    (r"^BUG: (?:unable to handle (?:kernel paging request|page fault)|"
     r"unable to handle kernel)", "page fault", rip("BUG: unable to handle kernel paging request")),
    (r"^Unable to handle kernel (?P<what>.+?)(?: at virtual address| without uaccess|$)",
     "page fault", lambda m, t, i: f"Unable to handle kernel {m.group('what')}"
     + _in(function_after(t, i, True))),
    (r"^Internal error: ", "Oops", rip("Internal error")),
    (r"^(?:(?:NMI )?watchdog: )?BUG: soft lockup", "soft lockup", rip("BUG: soft lockup")),
    (r"(?:NMI watchdog|watchdog): Watchdog detected hard LOCKUP", "hard lockup",
     rip("BUG: hard lockup")),
    (r"^(?:rcu: )?INFO: rcu_\w+ (?:self-)?detected (?:expedited )?stalls?", "RCU stall",
     stack("INFO: rcu detected stall")),
    (r"^INFO: task \S+ blocked (?:in I/O wait )?for more than \d+ seconds", "hung task",
     stack("INFO: task hung")),
    (r"^INFO: task \S+ can't die for more than", "hung task", stack("INFO: task can't die")),
    (r"^VFS: (?P<msg>Close: file count is 0|Busy inodes after unmount)", "VFS",
     lambda m, t, i: f"VFS: {m.group('msg')}"),
    (r"^BUG: sleeping function called from invalid context", "atomic sleep",
     stack("BUG: sleeping function called from invalid context")),
    (r"^BUG: scheduling while atomic", "atomic sleep", stack("BUG: scheduling while atomic")),
    (r"^BUG: using (?P<what>\S+) in preemptible", "preemption",
     lambda m, t, i: f"BUG: using {m.group('what')} in preemptible code"
     + _in(function_after(t, i, False))),
    (r"^BUG: spinlock (?P<what>[\w ]+?) on CPU", "spinlock",
     lambda m, t, i: f"BUG: spinlock {m.group('what')}" + _in(function_after(t, i, False))),
    (r"^BUG: [Bb]ad page (?P<what>state|map)", "bad page",
     lambda m, t, i: f"BUG: Bad page {m.group('what')}" + _in(function_after(t, i, False))),
    (r"^BUG (?P<cache>[\w-]+) \((?:Not tainted|Tainted: [^)]*)\): (?P<msg>.+)$", "SLUB",
     lambda m, t, i: f"BUG: {m.group('cache')}: {m.group('msg')}"),
    (r"^unreferenced object 0x[0-9a-f]+", "memory leak", stack("memory leak")),
    (r"^\[ BUG: (?P<msg>Invalid wait context) \]", "lockdep",
     lambda m, t, i: f"BUG: {m.group('msg')}" + _in(function_after(t, i, False))),
    (r"^INFO: trying to register non-static key", "lockdep",
     stack("INFO: trying to register non-static key")),
    (r"^refcount_t: ", "refcount", stack("WARNING: refcount bug")),
    (r"^(?:Oops: )?Oops: ", "Oops", rip("Oops")),
    (r"^BUG: (?P<msg>.+?)(?:,| at | for |$)", "BUG",
     lambda m, t, i: f"BUG: {m.group('msg')}" + _in(function_after(t, i, True))),
    (r"^Kernel panic - not syncing: (?P<msg>.+)$", "panic",
     lambda m, t, i: f"kernel panic: {m.group('msg')}"),
    (r"^Unhandled fault", "Unhandled fault", rip("Unhandled fault")),
]
COMPILED = [(re.compile(p), kind, titler) for p, kind, titler in HEADLINES]


def find(data: bytes) -> List[Crash]:
    """Every crash headline in a kernel log, in order."""
    return list(find_in(logparse.split_lines(data)))


def find_in(lines: Iterable[str]) -> Iterator[Crash]:
    """Every crash headline of a stream of lines, in order, in the memory of
    a block of them (a title looks at most REPORT_LINES further)."""
    texts = ((lineno, t) for lineno, raw in enumerate(lines, 1) for t in texts_of(raw))
    for window, found, n in windowed(texts, headlines, BLOCK, REPORT_LINES + 1):
        yield from (c for i, c in found if i < n)


def headlines(window: List[Tuple[int, str]]) -> List[Tuple[int, Crash]]:
    """(index in window, crash) of the headlines of a window of texts."""
    texts = [t for _, t in window]
    out = []
    for i, (lineno, t) in enumerate(window):
        for pattern, kind, titler in COMPILED:
            m = pattern.search(t) if kind == "hard lockup" else pattern.match(t)
            if m:
                out.append((i, Crash(lineno, t, kind, titler(m, texts, i),
                                     frames_after(texts, i))))
                break
    return out


def frames_after(texts: List[str], start: int) -> Tuple[str, ...]:
    """The functions of the stack frames in the REPORT_LINES after a headline."""
    frames = (FRAME_RE.match(t) for t in texts[start + 1:start + 1 + REPORT_LINES])
    return tuple(plain(m.group(2)) for m in frames if m and not m.group(1))


def first(data: bytes) -> Optional[Crash]:
    found = find(data)
    return found[0] if found else None
