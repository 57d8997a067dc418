"""Named properties of the evidence, as assertions whose messages say which
promise was broken, where in the log, and which run directory holds it."""
from rig.evidence import Evidence
from rig.rigprintk import MARK_RUN_BEGIN, Tag
from rig.wire import foreign_byte


def assert_immediate(ev: Evidence, line, tag: Tag):
    """Every byte of the line (and its CRLF) went out during the printk() call,
    written by the calling CPU."""
    during = ev.during_call(tag)
    wire = (line.raw + "\r\n").encode()
    written = bytes(r.value for r in during)
    assert wire in written, (
        f"emergency line not written during its printk() call: {line.raw!r}; "
        f"{len(written)} bytes went out between the markers ({ev.where()})")
    start = written.index(wire)
    cpus = {r.cpu for r in during[start:start + len(wire)]}
    assert cpus == {tag.cpu}, (f"the line's bytes came from vCPUs {cpus}, the caller was "
                               f"CPU {tag.cpu} ({ev.where()})")


def assert_deferred(ev: Evidence, line, tag: Tag):
    written = bytes(r.value for r in ev.during_call(tag))
    assert (line.raw + "\r\n").encode() not in written, (
        f"line written during its printk() call although it is not an emergency: "
        f"{line.raw!r} ({ev.where()})")
    assert line in ev.transcript.lines


def single(ev: Evidence, scen: str):
    found = ev.tagged(scen)
    assert len(found) == 1, f"expected one tagged line of {scen}, found {len(found)} ({ev.where()})"
    return found[0]


def assert_ier_restored(ev: Evidence):
    """Console writes clear IER and restore what they found, however they nest:
    from the run's start on, IER is only ever 0 or the value it had before,
    and it ends with that value."""
    recs = ev.log.records
    begin = next(i for i, r in enumerate(recs) if r.reg == "MARKER" and r.value == MARK_RUN_BEGIN)
    # The run may begin in the middle of a console write, with IER cleared:
    # the port's own value is the last non-zero one restored before.
    before = [r.value for r in recs[:begin] if r.reg == "IER" and not r.is_read and r.value]
    v0 = before[-1] if before else 0
    during = [r for r in recs[begin:] if r.reg == "IER" and not r.is_read]
    odd = [r for r in during if r.value not in (0, v0)]
    assert not odd, (f"IER {odd[0].value:#04x} written at log record {odd[0].seq} by vCPU "
                     f"{odd[0].cpu}; before the run it was {v0:#04x} ({ev.where()})")
    assert during and during[-1].value == v0, (
        f"IER {v0:#04x} before the console writes, {during[-1].value:#04x} after "
        f"(log record {during[-1].seq}) ({ev.where()})")


def assert_contiguous(ev: Evidence, line, cpu: int):
    """The line is on the wire whole, and every byte of its text came from cpu."""
    wl = ev.wire_line_of(line)
    assert wl is not None, (f"line {line.lineno} not found whole on the wire: {line.raw!r} "
                            f"({ev.where()})")
    stray = foreign_byte(wl, cpu)
    assert stray is None, (
        f"emergency line from cpu{cpu} interleaved with a byte from vCPU {stray.cpu} "
        f"at log record {stray.seq}: {line.raw!r} ({ev.where()})")
