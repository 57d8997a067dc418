"""rig demo: what the rig is for, in one boot of the patched kernel.

CPU 1 stores a backlog of INFO lines at once; the printer thread (pinned to
CPU 0) writes them to the baud-accurate console. While it is in the middle
of one of them, the instrumented UART fires an NMI at CPU 1, whose handler
prints an ERR line: the emergency line takes the console over between two
bytes, goes out at once ahead of the backlog, and the interrupted line is
printed again whole. The console is shown as it happens (the flood as a
count, the lines around the NMI whole); then the figures, read off the
register log's virtual time, the verdicts, and the run's HTML report.

On the icount clock from init's snapshot: the same bytes every run, and a
warm run takes seconds."""
import sys
from typing import List

from rig.artifacts import built as artifacts
from rig.boot import BootRequest, boot
from rig.evidence.boot import Evidence
from rig.evidence.properties import (Check, boot_checks, call_latency, contiguous,
                                     emergency_latency, ier_restored, immediate, interrupted_by,
                                     ousted_writer_keeps_off, overtakes_backlog,
                                     waiting_behind)
from rig.rigprintk import cmdline, mask, parse_tag
from rig.rundir import RunDir
from rig.tools.report.main import write_run
from rig.vm.qemu_argv import ICOUNT_CLOCK

SCEN = "demo"
FLOOD = 200                 # INFO lines of 120 bytes: about 2.3 s on the wire at 115200
VICTIM_SEQ = 20             # the NMI lands in this flood line ...
OFFSET = 40                 # ... right after its 40th byte
VICTIM = f"rigprintk: scen={SCEN} cpu=1 ctx=task seq={VICTIM_SEQ} "
LATENCY_BOUND = 1.1         # as S4: within 1.1x of the line's own wire time
EVERY = 25                  # the live view counts the flood in steps of this


def request() -> BootRequest:
    module = cmdline(scen=SCEN, flood_count=FLOOD, flood_cpus=mask([1]), flood_len=120,
                     flood_wait=False, printer_cpu=0, unknown_nmi=True,
                     unknown_nmi_cpus=mask([1]), nmi_level=3, markers=True, stamp=True)
    return BootRequest(flavor="patched", name=SCEN, clock=ICOUNT_CLOCK, snapshot=True,
                       cmdline=f"rig.steps=run,kmsg {module}",
                       uart_props={"nmi-pattern": VICTIM, "nmi-pattern-offset": str(OFFSET),
                                   "nmi-cpu": "1"})


class LiveView:
    """A file for boot(live=): shows the console as it comes, the flood as a
    count and the lines around the NMI whole."""

    def __init__(self, out=sys.stdout):
        self.out, self.partial, self.flood, self.previous, self.show_next = out, b"", 0, "", 0

    def write(self, data: bytes) -> int:
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        for raw in lines:
            self.line(raw.decode("utf-8", "replace").rstrip("\r"))
        return len(data)

    def flush(self) -> None:
        self.out.flush()

    def say(self, text: str) -> None:
        print(f"[demo] {text}", file=self.out, flush=True)

    def line(self, text: str) -> None:
        tag = parse_tag(text)
        if tag is not None and tag.scen == SCEN and tag.ctx == "nmi":
            self.say(f"console: {self.previous[:110]}   <- cut short")
            self.say(f"console: {text[:110]}   <- the NMI's ERR line")
            self.show_next = 2
        elif self.show_next:
            self.say(f"console: {text[:110]}")
            self.show_next -= 1
        elif tag is not None and tag.scen == SCEN and tag.ctx == "task":
            self.flood += 1
            if self.flood % EVERY == 0 or self.flood == 1:
                self.say(f"console: INFO line {self.flood} of the backlog is out "
                         f"(seq={tag.seq})")
        elif "rig-init: start" in text:
            self.say("console: init runs; the module stores "
                     f"{FLOOD} INFO lines at once")
        self.previous = text


def figures(ev: Evidence, line, tag) -> List[str]:
    """When the call was made, when its last bit left the wire, what waited."""
    lat = call_latency(ev, line, tag)
    nmi = next(r for r in ev.log.records if r.reg == "NMI")
    out = [f"the UART fired the NMI at vCPU 1 right after byte {OFFSET} of flood line "
           f"seq={VICTIM_SEQ} (log record {nmi.seq})",
           f"printk() of the ERR line called at guest time {tag.t_call_ns / 1e9:.6f} s, "
           f"in NMI on CPU {tag.cpu}"]
    if lat is not None:
        out.append(f"its last bit left the wire {lat.ns / 1e6:.3f} ms later (virtual time); "
                   f"its {lat.line_bytes} bytes alone take {lat.physical_ns / 1e6:.3f} ms at "
                   f"the programmed rate: {lat.ratio:.3f}x")
    out.append(f"{waiting_behind(ev, SCEN, line, tag)} older INFO lines were still waiting "
               f"behind it")
    return out


def verdicts(ev: Evidence, line, tag) -> List[Check]:
    flood = sorted(t.seq for _, t in ev.tagged(SCEN) if t.ctx == "task")
    complete = flood == list(range(FLOOD))
    return boot_checks(ev) + [
        immediate(ev, line, tag),
        emergency_latency(ev, line, tag, LATENCY_BOUND, what="NMI's ERR line"),
        overtakes_backlog(ev, SCEN, line, tag, FLOOD // 2, what="NMI's ERR line"),
        interrupted_by(ev, VICTIM, line),
        contiguous(ev, line, 1),
        Check("no loss", complete, f"{len(flood)} of {FLOOD} INFO lines on the console, "
              f"{len(set(flood))} distinct"),
        ier_restored(ev), ousted_writer_keeps_off(ev, expect_takeover=False)]


def main() -> int:
    artifacts.qemu(build=True)      # only what the demo boots: no vanilla kernel
    artifacts.kernel("patched", build=True)
    artifacts.initramfs("patched", build=True)
    live = LiveView()
    live.say("patched kernel, 2 vCPUs, 115200 baud console, icount clock, from init's "
             "snapshot")
    result = boot(request(), live=live)
    live.say(f"run directory: {result.run_dir}")
    if result.outcome.cls != "clean":
        live.say(f"the run did not end cleanly: {result.outcome.cls}: {result.outcome.detail}")
        return 3 if result.outcome.cls == "rig-error" else 1
    ev = Evidence.of(result)
    nmi = [(ln, t) for ln, t in ev.tagged(SCEN) if t.ctx == "nmi"]
    if len(nmi) != 1:
        live.say(f"FAIL records once: the NMI's ERR line is on the console {len(nmi)} times, "
                 f"not once ({ev.where()})")
        return 1
    line, tag = nmi[0]
    for text in figures(ev, line, tag):
        live.say(text)
    checks = verdicts(ev, line, tag)
    for c in checks:
        print(f"[verdict] {c}")
    write_run(result.run_dir, None)
    report = result.run.file(RunDir.REPORT)
    live.say(f"report with the per-vCPU timeline: {report}")
    ok = all(c.ok for c in checks)
    print(f"[verdict] {'PASS' if ok else 'FAIL'}: {sum(c.ok for c in checks)} of "
          f"{len(checks)} properties hold")
    return 0 if ok else 1
