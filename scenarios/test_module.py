"""The test module's oops trigger, on both flavors: an oops in a module
thread leaves init running. The panic triggers are S10, the late console
S13, the NMI to a spinning CPU S14."""
import pytest

pytestmark = pytest.mark.boots


def test_oops_in_a_thread_leaves_init_running(rig_run, flavor):
    ev = rig_run(flavor, "oops-task", "run", crash="oops-task")
    assert b"BUG: kernel NULL pointer dereference" in ev.result.console, ev.where()
    assert b"Oops: " in ev.result.console, ev.where()
