"""S18 printer-thread liveness: after an emergency context is done with the
console, or has abandoned its emergency section, the printer threads print
the backlog by themselves, within a bounded virtual time, with nothing else
pushing them.

CPU 0 floods INFO lines; then the module prints nothing for QUIET_MS and
writes a deadline marker to the UART. Every INFO line must be whole on the
wire before that marker, written by the vCPU the console's printer thread
is pinned to: init's end-of-run flush and later printk() calls come after
the marker, and another CPU that flushes the consoles itself writes from
its own vCPU, so none of them can hide a printer that stopped.

- abandoned-section: before the flood, a thread on CPU 1 dies inside the
  emergency section of its own oops (an oops inside the oops), so CPU 1
  stays in that section for good. A printer that waits for every emergency
  section to end never prints again.
- after-emergency-line: once the consoles are idle, CPU 1 prints one long
  ERR line (about 60 ms on the wire), and CPU 0's flood comes while it is
  being written. The printer thread, woken by the flood, finds its console
  owned by the emergency writer and waits; when that writer releases the
  console, only the release can wake it: nothing prints after it.

Vanilla passes: it has no printer thread for its legacy console, and the
lines are on the wire in time, written by a printk() caller."""
import pytest

from rig.evidence.properties import assert_printed_by_deadline
from rig.rigprintk import mask

# Virtual time (-icount), so the quiet wait and the wire are measured in the
# same clock; no golden file: the oops text is not what this checks.
pytestmark = [pytest.mark.boots, pytest.mark.emergency]

COUNT, PAD = 40, 20
# The flood's wire time is about 0.35 s at 115200 baud (40 lines of ~90
# bytes); a printer that runs gets it out with room to spare.
QUIET_MS = 2000

# The printer thread is pinned away from the CPU that leaves the section,
# and its vCPU must write the flood: a context on that CPU flushes the
# consoles itself while it stays in the section, and would hide a printer
# that never runs again.
CASES = {
    "abandoned-section": dict(abandon_emergency=True, abandon_cpu=1, printer_cpu=0),
    "after-emergency-line": dict(flush_first=True, flood_wait=False, flood_start_ms=5,
                                 single_level=3, single_len=600, single_cpu=1, printer_cpu=0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_s18_printers_print_the_backlog_by_themselves(rig_run, flavor, like, case):
    ev = rig_run(flavor, "S18", "run", clock="icount", flood_count=COUNT,
                 flood_cpus=mask([0]), flood_len=PAD, liveness_ms=QUIET_MS, **CASES[case])
    if case == "abandoned-section":
        left = [ln for ln in ev.transcript.lines
                if "scen=S18 cpu 1 left an emergency section behind" in ln.text]
        if not left:
            pytest.fail("S18 setup: the module did not report the thread's death inside its "
                        f"emergency section ({ev.where()})", pytrace=False)
    flood = [(line, tag) for line, tag in ev.tagged("S18") if tag.cpu == 0 and tag.level == 6]
    assert len(flood) == COUNT, (f"no loss: {len(flood)} of {COUNT} flood lines on the "
                                 f"console ({ev.where()})")
    # Vanilla's 8250 is a legacy console without a printer thread.
    printer = None if like == "vanilla" else CASES[case]["printer_cpu"]
    assert_printed_by_deadline(ev, flood, QUIET_MS, printer)
