"""S14 accurate timestamps: a message printed from NMI while its CPU spins
with interrupts off carries a timestamp inside the spin, not the time it was
flushed; the transcript need not be sorted by time, and the rig reads it
anyway.

Both flavors store the record in NMI context (6.12's lockless ringbuffer), so
both must pass."""
import pytest

from rig.rigprintk import mask

pytestmark = [pytest.mark.boots, pytest.mark.nmi]

SPIN_MS = 400


def test_s14_nmi_record_time_lies_inside_the_interrupts_off_window(rig_run, flavor):
    ev = rig_run(flavor, "S14", "run", spin_cpu=1, spin_ms=SPIN_MS, nmi_cpus=mask([1]))
    lines = ev.transcript.lines
    start = next(ln for ln in lines if "cpu 1 spins with interrupts off" in ln.text)
    done = next(ln for ln in lines if "cpu 1 spin done" in ln.text)
    nmi = [(ln, t) for ln, t in ev.tagged("S14") if t.ctx == "nmi"]
    assert len(nmi) == 1 and nmi[0][1].cpu == 1, f"NMI lines {nmi} ({ev.where()})"
    ts = nmi[0][0].ts_usec
    assert start.ts_usec <= ts <= start.ts_usec + SPIN_MS * 1000, (
        f"NMI record at {ts / 1e6:.6f} s, the spin ran from about {start.ts_usec / 1e6:.6f} s "
        f"for {SPIN_MS} ms ({ev.where()})")
    assert ts < done.ts_usec
