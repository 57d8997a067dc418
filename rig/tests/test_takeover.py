"""rig.evidence.takeover: changes of hands read off the register log, and the ousted
writer's accesses while the new owner writes. Synthetic logs for each rule,
and the real S7 capture (an NMI on vCPU 1 took the console over from the
printer on vCPU 0)."""
import lzma
from pathlib import Path

from rig.evidence import uartlog
from rig.evidence.takeover import takeovers
from rig.evidence.wire import marker
from rig.protocol import MARK_RUN_BEGIN

DATA = Path(__file__).parent / "data"
OWN = 0x05


def log_of(accesses):
    """accesses: (cpu, reg, value[, read]) tuples; the port's own IER is set first."""
    recs = [(0, "IER", OWN)] + accesses
    data = uartlog.pack_header() + b"".join(
        uartlog.pack_record(i, i * 1000, a[0], a[1], a[2],
                            uartlog.FLAG_READ if len(a) > 3 and a[3] else 0)
        for i, a in enumerate(recs))
    return uartlog.parse(data)


def write(cpu, text, found=OWN):
    return ([(cpu, "IER", 0)] + [(cpu, "THR", b) for b in text.encode()]
            + [(cpu, "IER", found)])


def lsr(cpu):
    return (cpu, "LSR", 0x20, True)


def test_writes_one_after_another_are_no_takeover():
    assert takeovers(log_of(write(0, "ab") + write(1, "cd") + write(0, "e")), 1) == []


def test_a_takeover_the_ousted_writer_sits_out():
    log = log_of([(0, "IER", 0), (0, "THR", ord("a")), lsr(0)]
                 + write(1, "NMI\r\n", found=0) + [lsr(0), (0, "IER", OWN)])
    (t,) = takeovers(log, 1)
    assert (t.ousted_cpu, t.opened.seq, t.taker.seq, t.taker.cpu) == (0, 1, 4, 1)
    assert t.stray is None and t.ended.seq == 10


def test_the_ousted_writer_polling_lsr_is_a_stray_access():
    log = log_of([(0, "IER", 0), (0, "THR", ord("a")), (1, "IER", 0), (1, "THR", ord("N")),
                  lsr(0), (1, "THR", ord("\n")), (1, "IER", 0), (0, "IER", OWN)])
    (t,) = takeovers(log, 1)
    assert t.stray.seq == 5 and t.stray.reg == "LSR" and t.stray.is_read
    assert t.ended.seq == 7


def test_restoring_ier_while_the_taker_writes_is_a_stray_access():
    log = log_of([(0, "IER", 0), (1, "IER", 0), (0, "IER", OWN), (1, "IER", 0)])
    (t,) = takeovers(log, 1)
    assert t.stray.seq == 3 and t.stray.reg == "IER"


def test_the_taker_writing_several_records_keeps_the_ousted_writer_out():
    log = log_of([(0, "IER", 0)] + write(1, "x", found=0) + write(1, "y", found=0)
                 + [lsr(0), (0, "IER", OWN)])
    found = takeovers(log, 1)
    assert [t.taker.seq for t in found] == [2, 5] and all(t.stray is None for t in found)


def test_reading_from_the_middle_of_a_write():
    # From record 3 on: vCPU 0's write began before (IER 0 at 2) and ends
    # with the port's own value; vCPU 1's write after it is no takeover.
    log = log_of([(0, "IER", OWN), (0, "IER", 0), (0, "THR", 1), (0, "IER", OWN)]
                 + write(1, "z"))
    assert takeovers(log, 4) == []


def test_the_real_s7_capture_has_one_takeover_kept_off():
    log = uartlog.parse(lzma.decompress((DATA / "patched-s7-nmi-mid-line.uart.log.xz")
                                        .read_bytes()))
    found = takeovers(log, marker(log, MARK_RUN_BEGIN).seq)
    assert [(t.ousted_cpu, t.taker.cpu) for t in found] == [(0, 1)]
    assert found[0].stray is None and found[0].ended is not None


def test_the_next_boot_after_a_warm_reset_is_not_judged():
    # vCPU 1's write was open when the first boot panicked; the second boot
    # programs the divisor again, and its writes are no takeover of it.
    log = log_of([(1, "IER", 0), (1, "THR", 1), (0, "LCR", 0x83), (0, "DLL", 1),
                  (0, "DLM", 0), (0, "LCR", 3)] + write(0, "boot") + [(1, "IER", 0)])
    assert takeovers(log, 1) == []
