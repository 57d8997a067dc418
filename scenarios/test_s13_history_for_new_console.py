"""S13 history for a new console: after a flood wrapped the ringbuffer, the
module registers a console; it receives the history still in the buffer, in
order, with a `** N printk messages dropped **` line for the records the
wrap took, N equal to the first sequence number still in the buffer.

Two kinds of console: the module's legacy test console, and its nbcon
console on the second instrumented UART (riguart2), which prints the
history from its printer thread and counts the dropped records itself.

Inherited from 6.12 (per-console sequence numbers, CON_PRINTBUFFER): both
flavors must pass on the legacy console. On an nbcon console vanilla
prints the history without the dropped line: nbcon_seq_force() moves the
console to the oldest record still stored, and nothing counts the records
before it (the series' 0010 does). The console UARTs run without the baud
model here, so vanilla's synchronous printing does not take minutes."""
import pytest

from rig.evidence import logparse
from rig.rigprintk import mask, parse_tag

# Deterministic (-icount): the same run every time, its boots run beside the
# other deterministic ones (rig/vm/hostshare.py), and its wire-bound waits take
# less wall time than in real time.
pytestmark = [pytest.mark.boots, pytest.mark.noloss, pytest.mark.golden]

COUNT = 1500
FLOOD = dict(flood_count=COUNT, flood_cpus=mask([0]), flood_len=100, baud_model=False)


def test_s13_late_console_gets_history_and_dropped_count(rig_run, flavor):
    ev = rig_run(flavor, "S13", "run,conlog,kmsg", late_console=True, **FLOOD)
    assert_history_with_exact_dropped_count(ev, logparse.split_lines(ev.side.section("conlog")),
                                            "the legacy test console")


def test_s13_late_nbcon_console_gets_history_and_dropped_count(rig_run, flavor, lacks):
    lacks("vanilla", "nbcon_seq_force() starts a new nbcon console at the oldest record "
          "still stored and does not count the records before it as dropped")
    ev = rig_run(flavor, "S13", "run,kmsg", second_console="late", second_uart=True, **FLOOD)
    lines = logparse.split_lines(ev.result.run.console2_log.read_bytes())
    assert_history_with_exact_dropped_count(ev, lines, "riguart2")


def assert_history_with_exact_dropped_count(ev, lines, console: str):
    first = logparse.parse_console_line(1, lines[0]) if lines else None
    assert first is not None and first.dropped, (
        f"history for a new console: the first line of {console} is not a dropped "
        f"count: {lines[:1]!r} ({ev.where()})")
    seqs = [t.seq for t in (parse_tag(ln) for ln in lines) if t and t.scen == "S13"]
    assert seqs, f"history for a new console: no flood record on {console} ({ev.where()})"
    # The flood is the only writer, so its records have consecutive ringbuffer
    # seqs: one record in the later /dev/kmsg dump gives the seq of any other.
    anchor = next((r, t) for r in ev.kmsg for t in [parse_tag(r.text)] if t and t.scen == "S13")
    first_seq = anchor[0].seq - (anchor[1].seq - seqs[0])
    assert first.dropped == first_seq, (
        f"history for a new console: {console} says {first.dropped} records were dropped, "
        f"but the first record it got, cpu0#{seqs[0]}, has seq {first_seq}: the count is off "
        f"by {first.dropped - first_seq} ({ev.where()})")
    # While the console prints the history, the records stored meanwhile
    # may overwrite the oldest it has not reached yet: such a gap must be
    # counted by the dropped line in front of the next record.
    expect, pending = seqs[0], 0
    for raw in lines[1:]:
        line = logparse.parse_console_line(0, raw)
        if line is not None and line.dropped:
            pending += line.dropped
            continue
        tag = parse_tag(raw)
        if not (tag and tag.scen == "S13"):
            continue
        assert tag.seq == expect + pending, (
            f"history for a new console: on {console}, cpu0#{tag.seq} follows "
            f"cpu0#{expect - 1} with {pending} records counted as dropped in between: "
            f"the flood's history is not complete, in order or accounted for ({ev.where()})")
        expect, pending = tag.seq + 1, 0
    assert expect == COUNT, (
        f"history for a new console: the flood's history on {console} ends at "
        f"cpu0#{expect - 1}, not cpu0#{COUNT - 1} ({ev.where()})")
