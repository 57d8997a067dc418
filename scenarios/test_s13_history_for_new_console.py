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
from rig.evidence.properties import assert_history_with_exact_dropped_count
from rig.rigprintk import mask

# Deterministic (-icount): the same run every time, its boots run beside the
# other deterministic ones (rig/vm/hostshare.py), and its wire-bound waits take
# less wall time than in real time.
pytestmark = [pytest.mark.boots, pytest.mark.noloss, pytest.mark.golden]

COUNT = 1500
FLOOD = dict(flood_count=COUNT, flood_cpus=mask([0]), flood_len=100, baud_model=False)


def test_s13_late_console_gets_history_and_dropped_count(rig_run, flavor):
    ev = rig_run(flavor, "S13", "run,conlog,kmsg", late_console=True, **FLOOD)
    assert_history_with_exact_dropped_count(ev, logparse.split_lines(ev.side.section("conlog")),
                                            "the legacy test console", "S13", COUNT)


def test_s13_late_nbcon_console_gets_history_and_dropped_count(rig_run, flavor, lacks):
    lacks("vanilla", "nbcon_seq_force() starts a new nbcon console at the oldest record "
          "still stored and does not count the records before it as dropped")
    ev = rig_run(flavor, "S13", "run,kmsg", second_console="late", second_uart=True, **FLOOD)
    lines = logparse.split_lines(ev.result.run.console2_log.read_bytes())
    assert_history_with_exact_dropped_count(ev, lines, "riguart2", "S13", COUNT)

