"""What a run's report shows, gathered from its run directory: the verdict
per property, the transcript with each line's level, and the timeline of the
register log (console-line bars per vCPU, NMIs, markers, IER writes), all in
guest virtual nanoseconds."""
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

from rig import paths
from rig.evidence import crash, logparse, uartlog
from rig.evidence.boot import Evidence
from rig.evidence.logread import file_lines
from rig.evidence.properties import KMSG_CONTIGUOUS, boot_checks
from rig.evidence.wire import ier_problem, marker
from rig.protocol import MARK_RUN_BEGIN
from rig.rigprintk import parse_tag
from rig.rundir import BootResult, RunDir
from rig.vm.outcome import Outcome
from rig.faults import RigFault

LEVELS = ("EMERG", "ALERT", "CRIT", "ERR", "WARNING", "NOTICE", "INFO", "DEBUG")


class ReportError(RigFault, ValueError):
    """The directory is not a run directory the report can read; says why."""


@dataclass
class RecordedRun(BootResult):
    """A finished run read back from its directory: a BootResult (what
    rig.evidence.properties reads) plus its bundle."""
    bundle: dict = field(default_factory=dict)

    @classmethod
    def read(cls, run_dir: Path) -> "RecordedRun":
        run = RunDir(run_dir)
        if not run.has(RunDir.CONSOLE):
            raise ReportError(f"{run_dir}: not a run directory (no {RunDir.CONSOLE})")

        def load(name):
            try:
                return run.read_json(name, missing={})
            except ValueError as e:       # JSONDecodeError, UnicodeDecodeError
                raise ReportError(f"{run.file(name)}: not valid JSON ({e}); the run was cut "
                                  "short or the file damaged") from None
        summary, bundle = load(RunDir.SUMMARY), load(RunDir.BUNDLE)
        # summary.json has the whole outcome; a run that did not write one
        # (killed harness) has at most its class, in bundle.json.
        o = summary.get("outcome") or {"class": bundle.get("outcome") or "unknown"}
        outcome = Outcome(o.get("class", "unknown"), o.get("detail", "run did not finish"),
                          o.get("phase"))
        return cls(run_dir, outcome, [], summary.get("wall_s", 0.0), summary, bundle)

    @property
    def smp(self) -> int:
        return int(self.bundle.get("request", {}).get("smp") or 1)


def kmsg_levels(ev: Evidence) -> Dict[tuple, int]:
    """(timestamp in us, text) -> level, from the guest's /dev/kmsg dump."""
    return {(r.ts_usec, r.text): r.level for r in ev.kmsg}


def emergency_below(run: RecordedRun, sections: Dict[str, bytes]) -> Optional[int]:
    """The emergency loglevel of a seed-design kernel (records below it are
    emergency messages): the fifth field of /proc/sys/kernel/printk if the run
    read it, else emergency_loglevel= on the command line, else the kernel's
    CONFIG_CONSOLE_LOGLEVEL_EMERGENCY; None for a kernel without the notion."""
    fields = sections.get("printk-sysctl", b"").split()
    if len(fields) >= 5:
        return int(fields[4])
    m = re.search(r"(?:^| )emergency_loglevel=(\d+)", run.bundle.get("cmdline", ""))
    if m:
        return int(m.group(1))
    image = run.bundle.get("inputs", {}).get("kernel", {}).get("path")
    config = paths.kernel_build_of(image) / ".config" if image else None
    if config is not None and config.is_file():
        m = re.search(r"^CONFIG_CONSOLE_LOGLEVEL_EMERGENCY=(\d+)$", config.read_text(), re.M)
        if m:
            return int(m.group(1))
    return None


def level_of(line: logparse.ConsoleLine, levels: Dict[tuple, int]) -> Optional[int]:
    """The console prints no level: take the /dev/kmsg dump's, or the level the
    test module wrote into its tag."""
    if line.prio is not None:
        return line.prio & 7
    if (line.ts_usec, line.text) in levels:
        return levels[(line.ts_usec, line.text)]
    tag = parse_tag(line.text)
    return tag.level if tag else None


# A page holds the transcript lines of this many console line numbers; a
# longer run's transcript goes on further pages (report-2.html, ...), so
# that no page grows with the run.
PAGE_LINES = 5000
# The timeline draws at most this many bars and events, and says so.
MAX_BARS = MAX_EVENTS = 20_000
MAX_CRASHES = 200


def page_of(lineno: int) -> int:
    return (lineno - 1) // PAGE_LINES + 1


def transcript_pages(run: RecordedRun, ev: Evidence, headlines: Dict[int, str]
                     ) -> Iterator[Tuple[int, List[dict]]]:
    """(page, its lines) of the transcript, read as a stream: each line with
    its level, whether it is an emergency message, cut short by a takeover,
    a replay or dropped line, a crash headline."""
    levels, emergency = kmsg_levels(ev), emergency_below(run, ev.side.sections)
    page, lines, firmware = 1, [], 0
    for kind, line in logparse.transcript_events(file_lines(run.run.console_log)):
        if kind == "firmware":      # the console's first lines, before the kernel's
            firmware += 1
            item = {"n": firmware, "text": line, "kind": "firmware"}
        else:
            level = level_of(line, levels)
            item = {"n": line.lineno, "text": line.raw, "kind": "kernel",
                    "level": level, "cpu": line.cpu,
                    "emergency": emergency is not None and level is not None
                    and level < emergency,
                    "cut": kind == "fragment", "replay": line.replay,
                    "dropped": line.dropped, "crash": headlines.get(line.lineno)}
        if page_of(item["n"]) != page and lines:
            yield page, lines
            lines = []
        page = page_of(item["n"])
        lines.append(item)
    yield page, lines


def timeline(log: uartlog.UartLog) -> dict:
    """Bars: runs of THR bytes written by one vCPU within one console line
    (a line whose bytes came from two vCPUs is two bars or more); at most
    MAX_BARS bars and MAX_EVENTS events, from the run's start. Read as a
    stream: only the current line's vCPUs and bars are kept aside."""
    bars, cur, line_no, more_bars = [], None, 0, 0
    line_cpus, line_bars, interrupted = set(), [], 0
    events, more_events = [], 0
    for r in log.records:
        if r.reg in ("NMI", "MARKER") or (r.reg == "IER" and not r.is_read):
            if len(events) < MAX_EVENTS:
                events.append({"t": r.vtime_ns, "cpu": r.cpu, "kind": r.reg, "value": r.value})
            else:
                more_events += 1
            continue
        if r.reg != "THR" or r.is_read:
            continue
        if cur is None or cur["cpu"] != r.cpu:
            line_cpus.add(r.cpu)
            cur = {"cpu": r.cpu, "t0": r.vtime_ns, "t1": r.vtime_ns, "line": line_no,
                   "text": "", "mixed": False}
            if len(bars) < MAX_BARS:
                bars.append(cur)
                line_bars.append(cur)
            else:
                more_bars += 1          # counted, not drawn
        cur["t1"] = r.vtime_ns
        if len(cur["text"]) < 512:
            cur["text"] += chr(r.value) if 32 <= r.value < 127 else ""
        if r.value == 0x0A:
            if len(line_cpus) > 1:
                interrupted += 1
                for b in line_bars:
                    b["mixed"] = True
            line_no += 1
            cur, line_cpus, line_bars = None, set(), []
    if len(line_cpus) > 1:          # a last line without its newline
        interrupted += 1
        for b in line_bars:
            b["mixed"] = True
    records = log.records
    return {"bars": bars, "events": events,
            "start": records[0].vtime_ns if len(records) else 0,
            "end": records[-1].vtime_ns if len(records) else 1,
            "lines_on_wire": line_no, "interrupted_lines": interrupted,
            "bars_not_drawn": more_bars, "events_not_drawn": more_events}


def properties(run: RecordedRun, ev: Evidence, test_verdict: Optional[dict]) -> List[dict]:
    """The verdicts the page lists: the test's own (from JUnit), the boot
    properties every run must have (rig.evidence.properties), IER across console writes."""
    out = []
    cls = run.outcome.cls
    # A test may end its run on purpose (a panic scenario): then the end is
    # expected of it, and its own verdict says whether the run is right.
    out.append({"prop": "run ended clean (init finished every step)", "ok": cls == "clean",
                "expected": expects_end(test_verdict),
                "detail": f"{cls}: {run.outcome.detail}"})
    if test_verdict:
        # A strict xfail is a property that does not hold, as expected of that kernel.
        out.append({"prop": f"test {test_verdict['test']}",
                    "ok": test_verdict["verdict"] == "passed",
                    "expected": test_verdict["verdict"] in ("xfailed", "skipped"),
                    "detail": test_verdict["verdict"] + (
                        f": {test_verdict['message']}" if test_verdict.get("message") else "")})
    # A run that ends in a panic on purpose has splats, no /dev/kmsg dump and
    # no clean exit: only the first two boot properties apply to it.
    # The /dev/kmsg check needs rig-init's kmsg step; only runs with it have one.
    boot = [c for c in boot_checks(ev)
            if c.prop != KMSG_CONTIGUOUS or "kmsg" in ev.side.sections]
    for c in boot if run.outcome.cls == "clean" else boot[:2]:
        out.append({"prop": c.prop, "ok": c.ok, "detail": c.detail, "expected": False})
    log = ev.log
    begin = marker(log, MARK_RUN_BEGIN) if log is not None else None
    if begin is not None:     # from the module's run on: before it the driver sets IER up
        problem = ier_problem(log, begin.seq)
        out.append({"prop": "IER restored after every console write", "ok": problem is None,
                    "expected": False,
                    "detail": problem or "every console write from the run's start on put "
                                         "back the IER it found"})
    return out


def expects_end(test_verdict: Optional[dict]) -> bool:
    """The test that made the run passed (or failed as expected) with it."""
    return bool(test_verdict) and test_verdict["verdict"] in ("passed", "xfailed")


def verdict(props: List[dict], outcome_cls: str) -> str:
    """PASS, FAIL, or XFAIL when every failing property was expected to fail;
    never PASS for a run that did not end clean: its class (PANIC, HANG,
    QEMU-CRASH, RIG-ERROR, UNKNOWN) is its verdict."""
    if outcome_cls != "clean":
        return outcome_cls.upper()
    failing = [p for p in props if not p["ok"]]
    if not failing:
        return "PASS"
    return "XFAIL" if all(p["expected"] for p in failing) else "FAIL"


def gather(run_dir: Path, test_verdict: Optional[dict] = None) -> dict:
    """What the run's page shows. Its transcript's first page is "lines";
    "more_pages" yields the others, (page, lines), as a stream."""
    run = RecordedRun.read(run_dir)
    ev = Evidence.of(run, lenient=True, transcript=False)
    props = properties(run, ev, test_verdict)
    crashes, headlines = [], {}
    for c in crash.find_in(file_lines(run.run.console_log)):
        if len(crashes) < MAX_CRASHES:
            crashes.append({"title": c.title, "line": c.lineno, "page": page_of(c.lineno)})
            headlines[c.lineno] = c.title
    pages = transcript_pages(run, ev, headlines)
    first_page, lines = next(pages)
    return {
        "run_dir": str(run_dir),
        "name": run.summary.get("name") or run.bundle.get("name") or run_dir.name,
        "flavor": run.summary.get("flavor") or run.bundle.get("flavor", "?"),
        # A run from before profiles was on the default one; a user's kernel has none.
        "profile": (run.summary.get("profile") if "profile" in run.summary
                    else run.bundle.get("profile", "default")) or "none (a kernel of your own)",
        "test": run.bundle.get("test"),
        "kernel": run.summary.get("kernel", {}).get("release", "?"),
        "outcome": {"class": run.outcome.cls, "detail": run.outcome.detail},
        "clock": run.summary.get("clock", "host"),
        "cpus": run.smp,
        "properties": props,
        "verdict": verdict(props, run.outcome.cls),
        # A run the test ended on purpose and judged right (a panic scenario).
        "expected_end": run.outcome.cls != "clean" and expects_end(test_verdict),
        "crashes": crashes,
        "lines": lines,
        "page": first_page,
        "more_pages": pages,
        "timeline": timeline(ev.log) if ev.log is not None else None,
        "levels": LEVELS,
    }
