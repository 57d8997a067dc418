"""The test module's triggers, on both flavors: each one does what the
scenarios will rely on, on a real boot (a late console gets the history, an
oops in a thread leaves init running, a panic from NMI while another CPU
floods is a panic, an NMI reaches a CPU spinning with interrupts off)."""
import pytest

from rig import logparse, sidechannel
from rig.boot import BootRequest
from rig.rigprintk import cmdline, mask, parse_tag

pytestmark = pytest.mark.boots


def run(rig_boot, flavor, name, steps, **module):
    return rig_boot(BootRequest(flavor=flavor, name=name,
                                cmdline=f"rig.steps={steps} {cmdline(scen=name, **module)}"))


def test_late_console_receives_the_history(rig_boot, flavor):
    result = run(rig_boot, flavor, "late-console", "run,conlog", late_console=True,
                 single_level=6)
    assert result.outcome.cls == "clean", result.outcome
    conlog = logparse.split_lines(sidechannel.parse(result.side).section("conlog"))
    first = next((i for i, ln in enumerate(conlog) if "Linux version" in ln), None)
    assert first is not None, (f"the late console did not get the first boot line; it got "
                               f"{len(conlog)} lines ({result.run_dir})")
    begin = next((i for i, ln in enumerate(conlog) if "scen=late-console run begin" in ln), None)
    tagged = next((i for i, ln in enumerate(conlog) if parse_tag(ln)), None)
    assert begin is not None and tagged is not None and first < begin < tagged, (
        f"history out of order on the late console ({result.run_dir})")


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


def test_nmi_reaches_a_cpu_spinning_with_interrupts_off(rig_boot, flavor):
    result = run(rig_boot, flavor, "spin-nmi", "run", spin_cpu=1, spin_ms=400,
                 nmi_cpus=mask([1]))
    assert result.outcome.cls == "clean", result.outcome
    t = logparse.parse_transcript(result.console)
    spin = next(ln for ln in t.lines if "cpu 1 spins with interrupts off" in ln.text)
    nmi = [(ln, tag) for ln in t.lines for tag in [parse_tag(ln.text)]
           if tag and tag.ctx == "nmi"]
    assert len(nmi) == 1 and nmi[0][1].cpu == 1, f"NMI lines: {nmi} ({result.run_dir})"
    # The record's time is the time of the call: inside the interrupts-off window.
    assert spin.ts_usec <= nmi[0][0].ts_usec <= spin.ts_usec + 400_000, (spin.raw, nmi[0][0].raw)
