"""Deterministic mode turns a host-timed QMP NMI into the UART's trigger."""
import pytest

from rig.boot import BootRequest, device_triggers

SPIN = (rb"cpu 0 spins with interrupts off", "inject-nmi", {})


def test_a_qmp_nmi_becomes_the_uarts_trigger_on_the_same_text_aimed_at_vcpu_0():
    req = device_triggers(BootRequest(clock="icount", qmp_when=SPIN,
                                      uart_props={"log-reads": "on"}))
    assert req.qmp_when is None
    assert req.uart_props == {"log-reads": "on", "nmi-pattern": "cpu 0 spins with interrupts off",
                              "nmi-cpu": "0"}


def test_without_deterministic_mode_the_host_fires_it():
    req = BootRequest(qmp_when=SPIN)
    assert device_triggers(req) is req


def test_a_regex_or_another_command_cannot_be_made_deterministic():
    with pytest.raises(ValueError, match="regular expression"):
        device_triggers(BootRequest(clock="icount", qmp_when=(rb"cpu \d spins", "inject-nmi", {})))
    with pytest.raises(ValueError, match="only inject-nmi"):
        device_triggers(BootRequest(clock="icount", qmp_when=(rb"x", "stop", {})))
