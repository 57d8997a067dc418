"""S4 emergency ordering under backlog, S5 constant-time INFO printk().

CPU 0 floods 300 INFO lines (about 2 s of wire time at 115200 baud); 300 ms
in, when about 40 are on the wire, the module prints one ERR line. Patched: the ERR line reaches the wire
while most of the backlog waits, its last bit leaves the wire within 1.1x of
the line's own wire time (at the rate the guest programmed) after the
printk() call, and the backlog is still printed completely; INFO printk()
calls return in microseconds. Vanilla: no backlog ever forms because the
caller prints (FIFO), and each INFO call waits for the wire.

Both run under -icount (the default shift), so that virtual time does not
stretch when the host deschedules a vCPU: the latency is a property of the
kernel, and it is read off the register log's virtual time. They pinned
shift 3 until kernel-patches/0008: at 4 the emergency write's wait for the
console ran out while the printer thread, retrying, held the vCPUs' turns."""
import pytest

from rig import paths
from rig.evidence.properties import assert_overtakes_backlog, emergency_latency, holds
from rig.rigprintk import mask, stats

pytestmark = [pytest.mark.boots, pytest.mark.emergency, pytest.mark.golden]

# The properties do not grow with the backlog: the ERR line must overtake at
# least a third of it, its latency is bounded by its own wire time, S5's by a
# call's time. 300 lines leave about 260 waiting behind it; on the rt profile
# the printer thread (nice -20) shares the flood's CPU and slows the flood,
# and about 110 of 150 stored by the ERR's call waited behind it. (A backlog that
# nearly fills the ringbuffer is test_kernel_patches' NMI backlog.)
FLOOD = 300
BACKLOG = dict(flood_count=FLOOD, flood_cpus=mask([0]), flood_wait=False,
               flood_backlog_ms=300, single_level=3, stamp=True, markers=True,
               clock="icount")
LATENCY_BOUND = 1.1


def err_line(ev):
    """S4's one ERR line on the console and its tag."""
    err = [(ln, t) for ln, t in ev.tagged("S4") if t.level == 3]
    assert len(err) == 1, (f"records once: the ERR line is on the console {len(err)} times, "
                           f"not once ({ev.where()})")
    return err[0]


def test_s4_emergency_line_overtakes_the_backlog(rig_run, flavor, lacks):
    lacks("vanilla", "no emergency messages: the ERR line waits its turn in FIFO order")
    ev = rig_run(flavor, "S4", "run", **BACKLOG)
    tagged = ev.tagged("S4")
    line, tag = err_line(ev)
    assert_overtakes_backlog(ev, "S4", line, tag, FLOOD // 3)
    flood = sorted(t.seq for _, t in tagged if t.level == 6)
    assert flood == list(range(FLOOD)), (
        f"no loss: backlog not printed completely after the ERR line: {len(flood)} of "
        f"{FLOOD} lines, "
        f"{len(set(flood))} distinct ({ev.where()})")


def test_s4_emergency_line_leaves_the_wire_within_its_wire_time(rig_run, flavor, lacks,
                                                                cannot_judge):
    lacks("vanilla", "no emergency messages: the ERR line waits its turn in FIFO order",
          paths.NOT_RT)
    for like in ("vanilla", "patched"):
        cannot_judge(like, ("rt",), "the printk() caller is preemptible, and the printer "
                     "thread (nice -20) woken on its CPU runs first, so the time from the "
                     "call to the wire holds that wait too: the bound is for a caller that "
                     "runs")
    # S4's run, judged again (as S5 does).
    ev = rig_run(flavor, "S4", "run", **BACKLOG)
    line, tag = err_line(ev)
    check = emergency_latency(ev, line, tag, LATENCY_BOUND)
    print(f"ERR line under backlog: {check.detail}")
    holds(check)


def test_s5_info_printk_runs_in_bounded_time(rig_run, flavor, lacks, record_property):
    lacks("vanilla", "the INFO printk() caller prints to the console itself", paths.NOT_RT)
    # S4's run: on the icount clock the same request is the same run, so
    # this test judges it too instead of booting it again (scenarios/conftest.py).
    ev = rig_run(flavor, "S4", "run", **BACKLOG)
    s = stats(ln.text for ln in ev.transcript.lines)["flood"]
    record_property("info_printk_ns", s)
    print(f"INFO printk() under a {FLOOD}-line backlog: p50 {s['p50']} ns, "
          f"p99 {s['p99']} ns, max {s['max']} ns")
    # One 60-byte line takes 5.2 ms on the wire: a call that prints one takes
    # longer, a bounded call less than half of it (on the debug profile
    # lockdep and the latency tracer slow each call: p99 2.2 ms seen).
    assert s["p99"] < 2_600_000, (f"bounded printk(): INFO printk() p99 {s['p99']} ns under "
                                  f"backlog: callers "
                                  f"print others' messages ({ev.where()})")
