"""S15 emergency loglevel control: the threshold (default 5) is the fifth
field of /proc/sys/kernel/printk; `emergency_loglevel=` on the command line
and a write to that field move it, both ways: at or above it a message is
no longer immediate, below it even INFO is.

Vanilla 6.12 has neither the parameter nor the fifth field (strict xfail)."""
import pytest

from rig import paths
from rig.evidence.properties import assert_deferred, assert_immediate, single

# Deterministic (-icount): the same run every time, its boots run beside the
# other deterministic ones (rig/vm/hostshare.py), and its wire-bound waits take
# less wall time than in real time.
pytestmark = [pytest.mark.boots, pytest.mark.emergency, pytest.mark.golden]

NO_CONTROL = "no emergency loglevel: no emergency_loglevel=, four fields in the printk sysctl"


def test_s15_default_threshold_makes_err_immediate(rig_run, flavor, lacks):
    lacks("vanilla", NO_CONTROL)
    # A write of fewer than five fields (the usual "echo 7 4 > ...") leaves
    # the threshold alone.
    ev = rig_run(flavor, "S15-default", "printk,run", extra="rig.printk=7:4", single_level=3,
                 markers=True)
    assert ev.printk_sysctl() == [7, 4, 1, 7, 5], (
        f"emergency threshold: /proc/sys/kernel/printk reads {ev.printk_sysctl()}")
    assert_immediate(ev, *single(ev, "S15-default"))


def test_s15_boot_parameter_lowers_the_threshold(rig_run, flavor, lacks):
    lacks("vanilla", NO_CONTROL)
    ev = rig_run(flavor, "S15-param", "printk,run", extra="emergency_loglevel=3",
                 single_level=3, markers=True)
    assert ev.printk_sysctl()[4:] == [3], (
        f"emergency threshold: /proc/sys/kernel/printk reads {ev.printk_sysctl()}")
    assert_deferred(ev, *single(ev, "S15-param"))


def test_s15_sysctl_raises_the_threshold(rig_run, flavor, lacks):
    lacks("vanilla", NO_CONTROL)
    ev = rig_run(flavor, "S15-sysctl", "printk,run", extra="rig.printk=7:4:1:7:8",
                 single_level=6, markers=True)
    assert ev.printk_sysctl() == [7, 4, 1, 7, 8], (
        f"emergency threshold: /proc/sys/kernel/printk reads {ev.printk_sysctl()}")
    assert_immediate(ev, *single(ev, "S15-sysctl"))


def test_s15_info_is_left_to_the_printer_thread(rig_run, flavor, lacks):
    lacks("vanilla", "no printer thread for legacy consoles: the INFO caller prints itself",
          paths.NOT_RT)
    ev = rig_run(flavor, "S15-info", "run", single_level=6, markers=True)
    assert_deferred(ev, *single(ev, "S15-info"))
