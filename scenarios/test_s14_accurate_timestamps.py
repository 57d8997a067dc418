"""S14 accurate timestamps: a message printed from NMI while its CPU spins
with interrupts off carries a timestamp inside the spin, not the time it was
flushed; the transcript need not be sorted by time, and the rig reads it
anyway.

The window is the spinning CPU's own local_clock() at the start and end of
the spin (the clock printk() stamps records with), printed in the "spin done"
line. The spinning CPU sends the NMI to itself 200 ms into the spin: an NMI
IPI from CPU 0 came once 5.4 s late, after the spin, because CPU 0 did not
run the sender in time (work on CPU 0 may itself wait for the spinning CPU).

Both flavors store the record in NMI context (6.12's lockless ringbuffer), so
both must pass."""
import re

import pytest

from rig.rigprintk import MARK_SELF_NMI, MARK_SPIN_END
from rig.wire import marker

pytestmark = [pytest.mark.boots, pytest.mark.nmi, pytest.mark.deterministic]

SPIN_MS = 400
DONE_RE = re.compile(r"cpu 1 spin done begin_ns=(\d+) end_ns=(\d+)")


def test_s14_nmi_record_time_lies_inside_the_interrupts_off_window(rig_run, flavor):
    ev = rig_run(flavor, "S14", "run", spin_cpu=1, spin_ms=SPIN_MS, spin_nmi_at_ms=SPIN_MS // 2)
    lines = ev.transcript.lines
    done = [(ln, m) for ln in lines for m in [DONE_RE.search(ln.text)] if m]
    assert len(done) == 1, f"{len(done)} 'spin done' lines ({ev.where()})"
    done_line, m = done[0]
    begin_us, end_us = int(m[1]) / 1000, int(m[2]) / 1000
    assert end_us - begin_us >= SPIN_MS * 1000, f"the spin lasted {end_us - begin_us:.0f} us"
    nmi = [(ln, t) for ln, t in ev.tagged("S14") if t.ctx == "nmi"]
    assert len(nmi) == 1 and nmi[0][1].cpu == 1, f"NMI lines {nmi} ({ev.where()})"
    ts = nmi[0][0].ts_usec
    # Console timestamps are truncated to whole microseconds.
    assert int(begin_us) <= ts <= end_us, (
        f"NMI record stamped {ts / 1e6:.6f} s, outside the interrupts-off window "
        f"{begin_us / 1e6:.6f} s .. {end_us / 1e6:.6f} s: it carries a later time than "
        f"its call ({ev.where()})")
    assert ts < done_line.ts_usec
    sent, spin_end = marker(ev.log, MARK_SELF_NMI), marker(ev.log, MARK_SPIN_END)
    assert sent and spin_end and sent.cpu == 1 and sent.seq < spin_end.seq, ev.where()
