"""S10 panic in NMI: CPU 1 panics from NMI context while CPU 0's flood keeps
the console busy. The run is classified panic (pvpanic), and the panic
message, its backtrace and the panic notifiers' last line are on the wire,
complete and in order, with the flood lines queued before the panic printed too.

A second case aims the UART's NMI trigger at the vCPU that is writing a
line, right after one of its bytes: the printer is stopped inside its unsafe
region on the panicking CPU itself, and only an unsafe takeover can print.
6.12 does that takeover only after the reboot that panic=-1 asks for, so the
whole panic was lost (kernel-patches/0007 flushes unsafely before rebooting).
Vanilla has no nbcon console, so it prints the panic either way.

(The catalogue also asks for kmsg_dump through ramoops, read back after a
warm reset; that part is not built yet.)"""
import pytest

from rig.rigprintk import mask

pytestmark = [pytest.mark.boots, pytest.mark.panic, pytest.mark.nmi]

PANIC = "Kernel panic - not syncing: rigprintk: panic in NMI on CPU 1"


def test_s10_panic_from_nmi_reaches_the_wire_complete(rig_run, flavor):
    ev = rig_run(flavor, "S10", "run", expect="panic", crash="panic-nmi", crash_cpu=1,
                 flood_count=300, flood_cpus=mask([0]), flood_wait=False, flood_backlog_ms=100)
    assert_panic_complete(ev)
    flood = sorted(t.seq for _, t in ev.tagged("S10") if t.ctx == "task")
    assert flood == list(range(len(flood))) and flood, (
        f"flood lines before the panic not printed in full: {len(flood)} lines "
        f"({ev.where()})")


def test_s10_panic_on_the_cpu_whose_printer_is_mid_byte(rig_run, flavor):
    ev = rig_run(flavor, "S10-midbyte", "run", expect="panic", flood_count=10,
                 flood_cpus=mask([0]), flood_len=100, unknown_nmi=True, nmi_panic=True,
                 uart_props={"nmi-pattern": "scen=S10-midbyte cpu=0 ctx=task seq=5 ",
                             "nmi-pattern-offset": "10", "nmi-cpu": "-1"})
    assert_panic_complete(ev, "Kernel panic - not syncing: rigprintk: panic from an unknown NMI")


def assert_panic_complete(ev, panic=PANIC):
    texts = [ln.text for ln in ev.transcript.lines]
    start = next((i for i, t in enumerate(texts) if panic in t), None)
    assert start is not None, f"no panic message on the wire ({ev.where()})"
    # With panic=-1 the kernel reboots (QEMU exits) right after the panic
    # notifiers, the last of which prints the kernel offset.
    end = next((i for i, t in enumerate(texts) if i > start and t.startswith("Kernel Offset:")),
               None)
    assert end is not None, (
        f"the panic output is cut short: no 'Kernel Offset:' line after the panic message "
        f"({ev.where()})")
    between = texts[start:end]
    assert any("Call Trace:" in t for t in between), "no backtrace between panic and its end"
    assert any("<NMI>" in t for t in between), "the backtrace does not show the NMI context"
