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
both must pass.

And a record's timestamp and CPU field belong to the same CPU: the module's
caller, pinned to one CPU, is moved to the other by a helper thread while
printk() waits out printk_delay (20 ms; moved 5 ms in), after the timestamp
was taken. The CPU field must name the CPU whose clock stamped the record,
the one the call began on. Vanilla has no CPU field."""
import re

import pytest

from rig.evidence.wire import marker
from rig.protocol import MARK_SELF_NMI, MARK_SPIN_END
from rig.rigprintk import parse_tag

pytestmark = [pytest.mark.boots, pytest.mark.nmi, pytest.mark.golden]

SPIN_MS = 400
DONE_RE = re.compile(r"cpu 1 spin done begin_ns=(\d+) end_ns=(\d+)")
MOVE_RE = re.compile(r"rigprintk: scen=S14-moved migrate seq=(\d+) from=(\d+) now=(\d+)")
MOVES = 6


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


def test_s14_timestamp_and_cpu_field_belong_to_the_same_cpu(rig_run, flavor, lacks):
    lacks("vanilla", "no CPU field")
    ev = rig_run(flavor, "S14-moved", "printk,run,kmsg", extra="rig.printk_delay=20",
                 migrate_count=MOVES, migrate_after_ms=5)
    moved = {(int(m[2]), int(m[1])): int(m[3]) for r in ev.kmsg
             for m in [MOVE_RE.search(r.text)] if m}
    records = [(r, t) for r in ev.kmsg for t in [parse_tag(r.text)]
               if t and t.scen == "S14-moved"]
    assert len(records) == MOVES and len(moved) == MOVES, (
        f"S14 setup: {len(records)} tagged records and {len(moved)} migrate lines in "
        f"/dev/kmsg, expected {MOVES} of each ({ev.where()})")
    crossed = [(r, t, moved[(t.cpu, t.seq)]) for r, t in records
               if moved.get((t.cpu, t.seq), t.cpu) != t.cpu]
    assert crossed, (f"S14 setup: no printk() call ended on another CPU than it began "
                     f"({ev.where()})")
    for r, t, now in crossed:
        assert r.extra and int(r.extra[0]) == t.cpu, (
            f"timestamp and CPU: record seq {r.seq} {r.text!r} has CPU field "
            f"{r.extra[0] if r.extra else None}, but its timestamp was taken on CPU {t.cpu}, "
            f"where the call began (the caller was on CPU {now} when it returned) "
            f"({ev.where()})")
