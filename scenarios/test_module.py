"""The test module's crash triggers, on both flavors, each while both CPUs
flood the console: an oops in a module thread leaves init running; a panic
in task, irq and NMI context, an oops in irq and NMI context (fatal there)
and a panic from the NMI IPI handler each end the run as a panic, with the
module's last tagged record (KERN_EMERG, from the crashing context) and the
panic message on the wire. S10 looks closer at the panic in NMI, S13 at the
late console, S14 at the NMI to a spinning CPU."""
import pytest

from rig.rigprintk import mask

pytestmark = [pytest.mark.boots, pytest.mark.panic, pytest.mark.golden]

# While both CPUs flood: the crash always happens with another CPU printing.
# 100 lines each: at the crash, 100 ms in, about 15 of the 200 are on the
# wire, so the panic still flushes a backlog; more would only be more of it.
FLOOD = dict(flood_count=100, flood_wait=False, flood_backlog_ms=100)

# crash parameter -> (exit class, context of the last tagged record, console text)
CRASHES = {
    "oops-task": ("clean", "task", "BUG: kernel NULL pointer dereference"),
    "panic-task": ("panic", "task", "Kernel panic - not syncing: rigprintk: panic-task on CPU"),
    "panic-irq": ("panic", "irq", "Kernel panic - not syncing: rigprintk: panic-irq on CPU"),
    "oops-irq": ("panic", "irq", "Kernel panic - not syncing: Fatal exception in interrupt"),
    "panic-nmi": ("panic", "nmi", "Kernel panic - not syncing: rigprintk: panic in NMI on CPU 1"),
    "oops-nmi": ("panic", "nmi", "Kernel panic - not syncing: Fatal exception in interrupt"),
}


@pytest.mark.parametrize("crash", CRASHES)
def test_crash_trigger_while_another_cpu_prints(rig_run, flavor, crash):
    cls, ctx, text = CRASHES[crash]
    ev = rig_run(flavor, crash, "run", expect=cls, crash=crash, crash_cpu=1, **FLOOD)
    assert text.encode() in ev.result.console, (f"crash on the console: no {text!r} on the "
                                                f"console ({ev.where()})")
    if crash.startswith("oops"):
        assert b"Oops: " in ev.result.console, ev.where()
    last = [t for _, t in ev.tagged(crash) if t.level == 0]
    assert len(last) == 1 and last[0].ctx == ctx, (
        f"records once: the crash's own KERN_EMERG record from {ctx} context: found {last} "
        f"({ev.where()})")
    assert any(t.ctx == "task" and t.level == 6 for _, t in ev.tagged(crash)), (
        f"no flood line on the console ({ev.where()})")


def test_panic_from_the_nmi_ipi_handler(rig_run, flavor):
    ev = rig_run(flavor, "nmi-ipi-panic", "run", expect="panic", nmi_cpus=mask([1]),
                 nmi_panic=True, **FLOOD)
    text = "Kernel panic - not syncing: rigprintk: panic from the NMI handler on CPU 1"
    assert text.encode() in ev.result.console, (f"crash on the console: no {text!r} on the "
                                                f"console ({ev.where()})")
    nmi = [t for _, t in ev.tagged("nmi-ipi-panic") if t.ctx == "nmi"]
    assert len(nmi) == 1 and nmi[0].cpu == 1, (f"records once: the NMI's records on the "
                                               f"console: {nmi} ({ev.where()})")
