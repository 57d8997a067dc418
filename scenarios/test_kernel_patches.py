"""The patched kernel's features that the catalogue does not cover on its
own: emergency output from NMI while the printer thread has a backlog (with
IER across the takeover), an emergency write that cannot be done (the NMI
lands on the CPU that is writing), legacy consoles printed by the printer
thread, and timestamps taken at the call under printk_delay. Vanilla runs
the same module and shows what it does instead. CPU tagging and the
emergency loglevel controls are S2 and S15."""
import pytest

from rig import paths
from rig.evidence import logparse
from rig.evidence.properties import assert_ier_restored, assert_immediate
from rig.rigprintk import console_stats, mask, parse_tag, stats

pytestmark = pytest.mark.boots

# --- emergency output from NMI while the printer has a backlog -----------------

# 1200 lines of about 60 bytes fit in the 128 KB ringbuffer with the boot
# messages: none is dropped, so every one must be on the console once. The
# printer thread is pinned to CPU 0, away from the NMI's CPU 1: an NMI that
# lands on the printer's own CPU while it is inside its unsafe region cannot
# take the console over, and its record rightly waits for the printer (that
# case is test_nmi_on_the_writing_cpu_defers_its_record_without_loss; it hit
# this test once when the scheduler put the printer on CPU 1).
FLOOD = 1200
BACKLOG = dict(flood_count=FLOOD, flood_cpus=mask([0]), flood_wait=False, flood_backlog_ms=300,
               nmi_cpus=mask([1]), nmi_level=3, markers=True, printer_cpu=0)


@pytest.mark.golden
@pytest.mark.flavor("patched")
def test_nmi_error_reaches_the_wire_ahead_of_the_backlog(rig_run):
    # Deterministic: the NMI's emergency write waits a bounded time for the
    # printer to hand the console over between two bytes, and under TCG a
    # host that deschedules vCPU 0 for longer made it give up (the record
    # then goes out in order, as designed, but this test is about the handover).
    ev = rig_run("patched", "nmi-backlog", "run", clock="icount", **BACKLOG)
    tagged = ev.tagged("nmi-backlog")
    nmi = [(i, ln, t) for i, (ln, t) in enumerate(tagged) if t.ctx == "nmi"]
    assert len(nmi) == 1, (f"records once: the NMI's line is on the console {len(nmi)} times, "
                           f"not once ({ev.where()})")
    pos, line, tag = nmi[0]
    after = [t for ln, t in tagged[pos + 1:] if t.ctx == "task"]
    assert len(after) >= FLOOD * 2 // 3, (
        f"emergency ordering: only {len(after)} flood lines followed the NMI line: the "
        f"backlog was not "
        f"there or the NMI line waited for it ({ev.where()})")
    assert line.cpu == 1 and tag.cpu == 1, (f"CPU tagging: the NMI line says CPU {line.cpu}, the "
                                            f"module printed it on CPU {tag.cpu}: {line.raw!r}")
    assert_immediate(ev, line, tag)
    assert_ier_restored(ev)
    flood = sorted(t.seq for ln, t in tagged if t.ctx == "task")
    assert flood == list(range(FLOOD)), (
        f"no loss: flood records lost or doubled on the console: {len(flood)} lines, "
        f"{len(set(flood))} distinct ({ev.where()})")


@pytest.mark.golden
@pytest.mark.flavor("vanilla")
def test_vanilla_runs_the_module_and_prints_in_the_callers_context(rig_run):
    if paths.profile() == "rt":
        pytest.skip("vanilla on rt: 6.12's PREEMPT_RT prints legacy consoles from the legacy "
                    "printer thread, not in the caller's context")
    ev = rig_run("vanilla", "nmi-backlog", "run", **BACKLOG)
    tagged = ev.tagged("nmi-backlog")
    assert sum(t.ctx == "nmi" for _, t in tagged) == 1, f"no NMI line ({ev.where()})"
    assert sorted(t.seq for _, t in tagged if t.ctx == "task") == list(range(FLOOD))
    s = stats(ln.text for ln in ev.transcript.lines)
    assert s["flood"]["calls"] == FLOOD, s
    # Vanilla has no CPU field, and its INFO printk() prints the line itself:
    # the caller waits for the wire (about 6 ms a line at 115200 baud).
    assert all(ln.cpu is None for ln, _ in tagged)
    assert s["flood"]["p50"] > 1_000_000, f"vanilla INFO printk() p50 {s['flood']['p50']} ns"


# --- an emergency write that cannot be done loses nothing ---------------------------

# The UART fires an NMI at the vCPU that writes byte 40 of this line, right
# after that byte: the writer is then inside its unsafe region, so the NMI's
# emergency write cannot take the console over, nor wait for a CPU that is
# itself. The record must follow in order, once; the interrupted line goes
# on whole.
WRITER_VICTIM = "rigprintk: scen=nmi-writer cpu=0 ctx=task seq=5 "


@pytest.mark.nmi
@pytest.mark.emergency
@pytest.mark.golden
@pytest.mark.parametrize("write", ["thread", "atomic"])
def test_nmi_on_the_writing_cpu_defers_its_record_without_loss(rig_run, flavor, write):
    # thread: INFO lines, written by the printer thread (patched, pinned to
    # CPU 1) or by the caller (vanilla); atomic: ERR lines, each written by
    # its caller on CPU 0 through write_atomic() (patched).
    ev = rig_run(flavor, "nmi-writer", "run", flood_count=10, flood_cpus=mask([0]),
                 flood_len=120, flood_level=6 if write == "thread" else 3, printer_cpu=1,
                 unknown_nmi=True, nmi_level=3,
                 uart_props={"nmi-pattern": WRITER_VICTIM, "nmi-pattern-offset": "40"})
    fired = [r for r in ev.log.records if r.reg == "NMI"]
    assert len(fired) == 1, f"the UART fired {len(fired)} NMIs ({ev.where()})"
    tagged = ev.tagged("nmi-writer")
    nmi = [(ln, t) for ln, t in tagged if t.ctx == "nmi"]
    assert len(nmi) == 1, (f"records once: the NMI's record is on the console {len(nmi)} "
                           f"times, not once ({ev.where()})")
    victim = [ln for ln, t in tagged if t.ctx == "task" and t.seq == 5]
    assert len(victim) == 1 and not any(WRITER_VICTIM in w.raw for _, w in
                                        ev.transcript.interrupted), (
        f"the interrupted line is not on the console once and whole ({ev.where()})")
    assert nmi[0][0].lineno > victim[0].lineno, (
        f"the NMI's record (console line {nmi[0][0].lineno}) came before the end of the line "
        f"its CPU was writing (line {victim[0].lineno}) ({ev.where()})")
    flood = sorted(t.seq for _, t in tagged if t.ctx == "task")
    assert flood == list(range(10)), f"flood lines lost or doubled: {flood} ({ev.where()})"
    assert_ier_restored(ev)


# --- legacy consoles are printed by the printer thread -------------------------------

@pytest.mark.golden
def test_legacy_console_is_printed_by_the_printer_thread(rig_run, flavor, lacks):
    lacks("vanilla", "legacy consoles are printed in the printk() caller's context "
                     "(6.12 has the legacy printer thread only on PREEMPT_RT)", paths.NOT_RT)
    ev = rig_run(flavor, "legacy", "run,conlog", flood_count=200, flood_cpus=mask([0, 1]),
                 early_console=True)
    got = [t for t in (parse_tag(ln) for ln in logparse.split_lines(ev.side.section("conlog")))
           if t and t.scen == "legacy"]
    for cpu in (0, 1):
        seqs = [t.seq for t in got if t.cpu == cpu]
        assert seqs == list(range(200)), (
            f"the legacy test console got {len(seqs)} of cpu{cpu}'s 200 records, or out of "
            f"order ({ev.where()})")
    s = console_stats(ln.text for ln in ev.transcript.lines)
    assert s is not None, f"no test console summary line ({ev.where()})"
    assert s["by_callers"] == 0, (
        f"legacy printer thread: {s['by_callers']} of the legacy console's {s['writes']} "
        f"writes ran in a flooding "
        f"printk() caller's context, not in the printer thread ({ev.where()})")


# --- timestamps are taken at the call -------------------------------------------

DELAY_MS = 40


@pytest.mark.golden
def test_timestamp_is_the_time_of_the_call(rig_run, flavor, like):
    ev = rig_run(flavor, "stamp", "printk,run,kmsg",
                   extra=f"rig.printk_delay={DELAY_MS}", flood_count=5, flood_cpus=mask([0]),
                   stamp=True)
    lags = []
    for r in ev.kmsg:
        tag = parse_tag(r.text)
        if tag and tag.scen == "stamp":
            lags.append(r.ts_usec - tag.t_call_ns // 1000)
    assert len(lags) == 5, f"expected 5 stamped records, got {len(lags)} ({ev.where()})"
    if like == "patched":
        assert max(lags) < 1000, (f"timestamp at the call: record timestamps lag the "
                                  f"printk() call by {lags} us "
                                  f"with printk_delay={DELAY_MS} ms ({ev.where()})")
    else:
        # Vanilla reads the clock after printk_delay (mdelay: calibrated, not exact).
        assert min(lags) >= DELAY_MS * 800, f"vanilla lags {lags} us"
