"""The register-log analysis (rig.evidence.wire, rig.evidence.uartlog) on a real capture: S7 on
the patched kernel, deterministic. The UART fired an NMI at vCPU 1 right
after byte 40 of a flood line that the printer thread wrote on vCPU 0; the
NMI's emergency line cut the line, the printer replayed it."""
import lzma
from pathlib import Path

import pytest

from rig.evidence import uartlog
from rig.evidence.wire import (find_line, foreign_byte, ier_problem, line_latency, marker,
                               programmed_format, wire_lines)
from rig.protocol import MARK_RUN_BEGIN, MARK_RUN_END

DATA = Path(__file__).parent / "data"
VICTIM = "[    1.318860] 000: rigprintk: scen=S7 cpu=0 ctx=task seq=5 lvl=6 pad=" + "x" * 120


@pytest.fixture(scope="module")
def log():
    return uartlog.parse(lzma.decompress((DATA / "patched-s7-nmi-mid-line.uart.log.xz")
                                         .read_bytes()))


@pytest.fixture(scope="module")
def console():
    return lzma.decompress((DATA / "patched-s7-nmi-mid-line.console.xz").read_bytes())


def test_the_thr_bytes_are_the_transcript(log, console):
    assert log.thr_bytes() == console
    streams = log.per_cpu_streams()
    assert set(streams) == {0, 1} and sum(map(len, streams.values())) == len(console)


def test_the_guest_programmed_115200_8n1(log):
    fmt = programmed_format(log)
    assert (fmt.baud, fmt.bits_per_char) == (115200, 10)


def test_the_cut_line_the_emergency_line_and_the_replay(log):
    nmi = [r for r in log.records if r.reg == "NMI"]
    assert len(nmi) == 1 and nmi[0].value == 1          # aimed at vCPU 1
    lines = wire_lines(log)
    after = [ln for ln in lines if ln.last.seq > nmi[0].seq][:4]
    cut, emerg, replay, whole = after
    # The cut line: the victim's first bytes from vCPU 0, ended by vCPU 1's newline.
    assert VICTIM.startswith(cut.text) and len(cut.text) < len(VICTIM)
    assert cut.body_cpus == {0} and cut.last.cpu == 1
    assert emerg.text.startswith("[    1.645401] 001: rigprintk: scen=S7 cpu=1 ctx=nmi seq=0")
    assert foreign_byte(emerg, 1) is None and emerg.cpus == {1}
    assert replay.text == "** replaying previous printk message **" and replay.cpus == {0}
    assert whole.text == VICTIM and find_line(lines, VICTIM) is whole
    # At the wire's speed from the NMI: the line's last bit left 1.03x its own
    # wire time after the UART fired (the CRLF that ended the cut line included).
    lat = line_latency(log, emerg, since_ns=nmi[0].vtime_ns)
    assert lat.line_bytes == len(emerg.text) + 2
    assert 1.0 < lat.ratio < 1.1, lat


def test_ier_ends_as_it_was_across_the_nested_writes(log):
    begin = marker(log, MARK_RUN_BEGIN)
    assert begin is not None and marker(log, MARK_RUN_END, begin.seq) is not None
    assert ier_problem(log, begin.seq) is None
    # The same log with the printer's last restore written wrong is caught.
    last = max(r.seq for r in log.records if r.reg == "IER")
    broken = uartlog.UartLog(log.header, [
        r if r.seq != last else uartlog.Record(r.seq, r.vtime_ns, r.cpu, r.reg, r.flags, 0)
        for r in log.records])
    assert ier_problem(broken, begin.seq) == (
        f"IER 0x05 before the console writes, 0x00 after (log record {last})")


def test_marker_bracketed_interval_of_the_run(log):
    # The module's run (floods stored, markers around it) returns long before
    # the printer thread has put the flood on the wire: the NMI, fired by the
    # sixth flood line's bytes, comes after the run's end marker.
    during = uartlog.between_markers(log, MARK_RUN_BEGIN, MARK_RUN_END)
    assert during and all(r.reg != "NMI" for r in during)
    end = marker(log, MARK_RUN_END)
    assert next(r for r in log.records if r.reg == "NMI").seq > end.seq
    assert VICTIM.encode() not in bytes(r.value for r in during if r.reg == "THR")
