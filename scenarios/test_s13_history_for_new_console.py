"""S13 history for a new console: after a flood wrapped the ringbuffer, the
module registers a console; it receives the history still in the buffer, in
order, with a `** N printk messages dropped **` line for the records the
wrap took, N equal to the first sequence number still in the buffer.

Inherited from 6.12 (per-console sequence numbers, CON_PRINTBUFFER): both
flavors must pass. The console UART runs without the baud model here, so
vanilla's synchronous printing does not take minutes."""
import pytest

from rig import logparse
from rig.rigprintk import mask, parse_tag

# Deterministic (-icount): the same run every time, its boots run beside the
# other deterministic ones (rig/hostshare.py), and its wire-bound waits take
# less wall time than in real time.
pytestmark = [pytest.mark.boots, pytest.mark.noloss, pytest.mark.deterministic]

COUNT = 1500


def test_s13_late_console_gets_history_and_dropped_count(rig_run, flavor):
    ev = rig_run(flavor, "S13", "run,conlog,kmsg", flood_count=COUNT, flood_cpus=mask([0]),
                 flood_len=100, late_console=True, baud_model=False)
    lines = logparse.split_lines(ev.side.section("conlog"))
    first = logparse.parse_console_line(1, lines[0])
    assert first is not None and first.dropped, (
        f"the late console's first line is not a dropped count: {lines[0]!r} ({ev.where()})")
    seqs = [t.seq for t in (parse_tag(ln) for ln in lines) if t and t.scen == "S13"]
    # The flood is the only writer, so its records have consecutive ringbuffer
    # seqs: one record in the later /dev/kmsg dump gives the seq of any other.
    anchor = next((r, t) for r in ev.kmsg for t in [parse_tag(r.text)] if t and t.scen == "S13")
    first_seq = anchor[0].seq - (anchor[1].seq - seqs[0])
    assert first.dropped == first_seq, (
        f"dropped count {first.dropped}, but the first record the late console got, "
        f"cpu0#{seqs[0]}, has seq {first_seq}: the count is off by "
        f"{first.dropped - first_seq} ({ev.where()})")
    assert seqs and seqs == list(range(seqs[0], COUNT)), (
        f"history of the flood on the late console not complete and in order: "
        f"{len(seqs)} lines from cpu0#{seqs[0] if seqs else None} ({ev.where()})")
