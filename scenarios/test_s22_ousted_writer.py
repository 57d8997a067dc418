"""S22 the 8250 after a takeover: a console writer that lost the console to
another CPU does not touch the UART while the new owner writes, not even to
poll the transmitter (rig.evidence.takeover reads the changes of hands off the
register log, with the UART's LSR and IIR reads logged).

The printer thread, pinned to CPU 0, prints INFO lines that CPU 1 queued;
CPU 1 takes the console over from it:
- task: every fourth of CPU 1's lines is an emergency line, printed in
  task context; in real time (-icount would hand the vCPUs their turns at
  the same few points), so that both vCPUs run at once and some takeovers
  catch the printer waiting for the transmitter: about one in three;
- nmi: the UART fires an NMI at CPU 1 in the middle of a line (as in S7),
  whose handler prints an emergency line while the printer waits for the
  transmitter.

Vanilla passes: its console write runs under the console lock and the port
lock, so outside a panic nothing takes it over."""
import pytest

from rig.evidence.properties import assert_ousted_writer_keeps_off
from rig.rigprintk import mask

pytestmark = [pytest.mark.boots, pytest.mark.emergency, pytest.mark.golden]

READS = {"log-reads": "on"}
VICTIM = "rigprintk: scen=S22 cpu=1 ctx=task seq=3 "
SETUPS = {
    "task": dict(flood_count=80, flood_delay_us=3000, flood_emerg_every=4,
                 flood_emerg_level=3, uart_props=READS, clock="host"),
    "nmi": dict(flood_count=10, flood_len=120, unknown_nmi=True, unknown_nmi_cpus=mask([1]),
                nmi_level=3, uart_props=dict(READS, **{"nmi-pattern": VICTIM,
                                                        "nmi-pattern-offset": "40",
                                                        "nmi-cpu": "1"})),
}


@pytest.mark.parametrize("setup", SETUPS)
def test_s22_ousted_writer_keeps_off_the_uart(rig_run, flavor, like, setup):
    ev = rig_run(flavor, "S22", "run", printer_cpu=0, flood_cpus=mask([1]), **SETUPS[setup])
    assert_ousted_writer_keeps_off(ev, expect_takeover=like != "vanilla")
