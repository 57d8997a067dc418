"""S6 host NMI on a wedged CPU: while CPU 0 spins with interrupts off, the
host injects an NMI over QMP (QEMU delivers it through LINT1, which Linux
wires as NMI on the boot CPU only); the NMI handler's message is on the wire
while CPU 0 still spins: its bytes are written before the spin-end marker
that vCPU 0 writes when it stops spinning, by vCPU 0, or by the CPU whose
emergency line held the console when the NMI came, right after that line
(an NMI hands its record over rather than wait for another CPU). The printer thread is
pinned to CPU 1, so that the spin's announcement, on which the host fires the
NMI, reaches the wire while CPU 0 spins. The spin lasts until the NMI has
been handled on CPU 0 (at least 300 ms), so the verdict does not depend on
how fast the host sees the announcement.

It runs twice: once from the host, as described, and once deterministically
(-icount), where a host-timed QMP command has no place: there the UART fires
the NMI at vCPU 0 right after the announcement's last byte
(rig.boot.device_triggers), and the run has a golden transcript.

Vanilla defers a printk() from NMI context to irq_work, which cannot run on
a CPU with interrupts off, so the message from the host's NMI waits for the
spin to end. The UART's NMI comes while CPU 1 still prints the announcement
under the console lock, and CPU 1 prints the NMI's record along with it: on
the wire that cannot be told from the patched kernel's handover, so vanilla
passes that case."""
import pytest

from rig.evidence.properties import assert_written_by_its_cpu_or_handed
from rig.evidence.wire import marker
from rig.protocol import MARK_SPIN_BEGIN, MARK_SPIN_END
from rig.rigprintk import mask

pytestmark = [pytest.mark.boots, pytest.mark.nmi, pytest.mark.emergency, pytest.mark.golden]

WEDGED = 0


@pytest.mark.parametrize("nmi_from", ["uart", "host"])
def test_s6_nmi_message_on_the_wire_while_the_cpu_spins(rig_run, flavor, like, lacks,
                                                       cannot_judge, nmi_from):
    if nmi_from == "host":
        lacks("vanilla", "printk() in NMI is deferred to irq_work (no atomic console)")
    cannot_judge("vanilla", ("rt",), "the announcement goes out through the legacy printer "
                 "thread, and when the scheduler has queued that thread on the spinning CPU "
                 "nothing prints until the spin ends, so the NMI the announcement fires never "
                 "comes during the spin")
    ev = rig_run(flavor, "S6", "run", clock=None if nmi_from == "uart" else "host",
                 spin_cpu=WEDGED, spin_ms=300, printer_cpu=1, unknown_nmi=True,
                 unknown_nmi_cpus=mask([WEDGED]), nmi_level=3,
                 qmp_when=(rb"cpu 0 spins with interrupts off", "inject-nmi", {}))
    nmi = [(ln, t) for ln, t in ev.tagged("S6") if t.ctx == "nmi"]
    assert len(nmi) == 1 and nmi[0][1].cpu == WEDGED, (
        f"records once: the wedged CPU's NMI line is on the console {len(nmi)} times: "
        f"{[ln.raw for ln, _ in nmi]} ({ev.where()})")
    begin, end = marker(ev.log, MARK_SPIN_BEGIN), marker(ev.log, MARK_SPIN_END)
    assert begin and end and begin.cpu == end.cpu == WEDGED, "no spin markers from the CPU"
    announced = next((ln for ln in ev.transcript.lines if "spins with interrupts off" in ln.text),
                     None)
    announced_wl = announced and ev.wire_line_of(announced)
    assert announced_wl and announced_wl.first.seq < end.seq, (
        f"S6 setup: the spin's announcement is not on the wire before the spin's end "
        f"(the host fires the NMI on it): {announced and announced.raw!r} ({ev.where()})")
    wl = ev.wire_line_of(nmi[0][0])
    assert wl is not None, (f"emergency contiguity: the NMI line is not whole on the wire "
                            f"({ev.where()})")
    assert wl.last.seq < end.seq, (
        f"emergency from a wedged CPU: the NMI line's last byte at log record {wl.last.seq} "
        f"({(wl.last.vtime_ns - end.vtime_ns) / 1e6:+.1f} ms from the spin's end): "
        f"it waited for the CPU to enable interrupts ({ev.where()})")
    # An NMI does not wait for another CPU's emergency writer: it may hand
    # its record to it, which writes it right after its own line. Vanilla
    # has no such handover: a console lock holder that prints the record
    # along, if the host's NMI happens to come while it prints, does not
    # count, so that vanilla's host case fails whatever the host's timing.
    may_hand = nmi_from == "uart" or like != "vanilla"
    assert_written_by_its_cpu_or_handed(ev, nmi[0][0], WEDGED, may_hand=may_hand)
