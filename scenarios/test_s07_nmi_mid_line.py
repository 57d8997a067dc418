"""S7 NMI in the middle of a line: the instrumented UART fires an NMI at
vCPU 1 right after byte 40 of a flood line that the printer thread (pinned to
CPU 0) is writing. The wire shows the partial line, a newline, the complete
emergency line with CPU field 1, then the interrupted record printed whole
(after nbcon's replay line); IER holds its old value once both are done.

Vanilla defers the NMI's printk(): the interrupted line completes first.

It runs deterministically (-icount): whether the NMI's CPU gets the console
between two bytes depends on when each vCPU runs, which host load would
otherwise decide."""
import pytest

from rig.evidence.properties import assert_ier_restored, assert_interrupted_by
from rig.rigprintk import mask

pytestmark = [pytest.mark.boots, pytest.mark.nmi, pytest.mark.emergency, pytest.mark.golden]

VICTIM = "rigprintk: scen=S7 cpu=0 ctx=task seq=5 "
OFFSET = 40


def test_s7_emergency_line_interrupts_a_line(rig_run, flavor, lacks):
    lacks("vanilla", "printk() in NMI is deferred: no emergency line in mid-line")
    ev = rig_run(flavor, "S7", "run", flood_count=10, flood_cpus=mask([0]), flood_len=120,
                 printer_cpu=0, unknown_nmi=True, unknown_nmi_cpus=mask([1]), nmi_level=3,
                 clock="icount",
                 uart_props={"nmi-pattern": VICTIM, "nmi-pattern-offset": str(OFFSET),
                             "nmi-cpu": "1"})
    fired = [r for r in ev.log.records if r.reg == "NMI"]
    assert len(fired) == 1, f"the UART fired {len(fired)} NMIs ({ev.where()})"
    nmi = [(ln, t) for ln, t in ev.tagged("S7") if t.ctx == "nmi"]
    assert len(nmi) == 1, (f"records once: the NMI's line is on the console {len(nmi)} times, "
                           f"not once ({ev.where()})")
    assert nmi[0][0].cpu == 1, (f"CPU tagging: the NMI line says CPU {nmi[0][0].cpu}, the "
                                f"module printed it on CPU 1: {nmi[0][0].raw!r} ({ev.where()})")
    assert_interrupted_by(ev, VICTIM, nmi[0][0])
    wl = ev.wire_line_of(nmi[0][0])
    assert wl is not None and wl.body_cpus == {1}, (
        f"emergency contiguity: the NMI's line not written whole by vCPU 1 ({ev.where()})")
    assert_ier_restored(ev)
