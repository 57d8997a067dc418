"""Named properties of the evidence, as assertions whose messages say which
promise was broken, where in the log, and which run directory holds it."""
from rig.evidence import Evidence
from rig.rigprintk import MARK_RUN_BEGIN, Tag
from rig.wire import foreign_byte, ier_problem, marker


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
    """Console writes clear IER and restore what they found, however they nest
    (rig.wire.ier_problem), from the run's start on."""
    begin = marker(ev.log, MARK_RUN_BEGIN)
    assert begin is not None, f"no run-begin marker in the register log ({ev.where()})"
    problem = ier_problem(ev.log, begin.seq)
    assert problem is None, f"{problem} ({ev.where()})"


def assert_contiguous(ev: Evidence, line, cpu: int):
    """The line is on the wire whole, and every byte of its text came from cpu."""
    wl = ev.wire_line_of(line)
    assert wl is not None, (f"line {line.lineno} not found whole on the wire: {line.raw!r} "
                            f"({ev.where()})")
    stray = foreign_byte(wl, cpu)
    assert stray is None, (
        f"emergency line from cpu{cpu} interleaved with a byte from vCPU {stray.cpu} "
        f"at log record {stray.seq}: {line.raw!r} ({ev.where()})")
