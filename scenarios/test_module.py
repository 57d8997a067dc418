"""The test module's triggers, on both flavors: each one does what the
scenarios rely on, on a real boot (an oops in a thread leaves init running,
a panic from NMI while another CPU floods is a panic). The late console is
S13, the NMI to a spinning CPU S14."""
import pytest

from rig.boot import BootRequest
from rig.rigprintk import cmdline, mask

pytestmark = pytest.mark.boots


def run(rig_boot, flavor, name, steps, **module):
    return rig_boot(BootRequest(flavor=flavor, name=name,
                                cmdline=f"rig.steps={steps} {cmdline(scen=name, **module)}"))


def test_oops_in_a_thread_leaves_init_running(rig_boot, flavor):
    result = run(rig_boot, flavor, "oops-task", "run", crash="oops-task")
    assert result.outcome.cls == "clean", result.outcome
    assert b"BUG: kernel NULL pointer dereference" in result.console
    assert b"Oops: " in result.console


def test_panic_in_nmi_while_another_cpu_floods(rig_boot, flavor):
    result = run(rig_boot, flavor, "panic-nmi", "run", crash="panic-nmi", crash_cpu=1,
                 flood_count=300, flood_cpus=mask([0]), flood_wait=False,
                 flood_backlog_ms=100)
    assert result.outcome.cls == "panic", result.outcome
    assert b"Kernel panic - not syncing: rigprintk: panic in NMI on CPU 1" in result.console, \
        f"no panic message on the console ({result.run_dir})"
