"""S19 interrupts-off waits: no CPU waits for another CPU with interrupts off
in printk() beyond a small bound; writing its own bytes is the only time it
may spend there. And no soft-lockup, hard-lockup or RCU-stall report.

CPU 0 prints ERR lines, each printk() call with interrupts disabled around
it (as under a spin_lock_irqsave()), while CPU 1 handles sysrq `l`: the
kernel's backtrace of all CPUs, CPU 1's own under printk_cpu_sync with
interrupts off, CPU 0's from an NMI. The module marks every call on the
UART's marker port, and the start and the end of every NMI handler chain,
so each window is read off the register log in virtual time together with
the bytes its vCPU wrote in it.

Vanilla fails, less badly: a cpu_sync owner and an NMI only store their
records, but a caller with interrupts off spins for the console lock
holder to finish its record (about 7 ms here) before it prints them all."""
import pytest

from rig.properties import assert_no_irqsoff_wait, assert_no_lockup_report, irqsoff_windows
from rig.rigprintk import mask

pytestmark = [pytest.mark.boots, pytest.mark.emergency, pytest.mark.nmi]

# An emergency write asks a printer thread to hand the console over and
# spins for it at most 2 ms (nbcon's spinwait_max_us): that is the one wait
# the design allows. Waiting for another CPU's lines is not.
BOUND_MS = 2.0


def test_s19_no_cpu_waits_for_another_with_interrupts_off(rig_run, flavor, lacks):
    lacks("vanilla", "a printk() caller with interrupts off spins for the console lock "
          "holder to finish its record before it prints (console_trylock_spinning)")
    ev = rig_run(flavor, "S19", "run", deterministic=True, flood_count=30, flood_level=3,
                 flood_cpus=mask([0]), flood_irqsoff=True, flood_len=20, flood_delay_us=2000,
                 flood_wait=False, flood_backlog_ms=20, markers=True, mark_nmis=True,
                 sysrq_cpu=1)
    if b"NMI backtrace for cpu 0" not in ev.result.console:
        pytest.fail(f"S19 setup: no NMI backtrace of CPU 0 on the console ({ev.where()})",
                    pytrace=False)
    assert_no_lockup_report(ev)
    assert_no_irqsoff_wait(ev, irqsoff_windows(ev), BOUND_MS)
