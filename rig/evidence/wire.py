"""What the UART register log says about console lines on the wire: the THR
byte stream cut into lines, each byte with the vCPU that wrote it and its
virtual time, and IER across the console writes.

This is evidence the transcript alone cannot give: who wrote each byte and
when, so that contiguity ("no foreign byte inside an emergency line"),
immediacy ("all bytes between these markers") and latency are read off
exactly.
"""
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from rig.evidence import logparse
from rig.evidence.uartlog import Record, UartLog


NONE_BIT = 63       # the bit of "no vCPU" in a WireLine's masks


@dataclass(slots=True)
class WireLine:
    """One line as the UART sent it: the bytes up to and including '\\n'.
    It keeps its text, its first and last THR records and who wrote it (as
    bit masks); its records are read back from the log when asked for
    (every THR write between its first and last is one of its bytes), so
    that a long flood's lines cost a few hundred bytes each, not a record
    per byte."""
    data: bytearray = field(default_factory=bytearray)
    first: Optional[Record] = None
    last: Optional[Record] = None
    writers: int = 0                # bit c: vCPU c wrote a byte
    body_writers: int = 0           # of the text, not the CR/LF
    source: Optional[Sequence[Record]] = None       # the log's records

    def add(self, r: Record) -> None:
        self.first = self.first or r
        self.last = r
        self.data.append(r.value)
        bit = 1 << (NONE_BIT if r.cpu is None else r.cpu)
        self.writers |= bit
        if r.value not in (0x0D, 0x0A):
            self.body_writers |= bit

    @property
    def cpus(self) -> set:
        return cpus_of(self.writers)

    @property
    def body_cpus(self) -> set:
        """vCPUs that wrote the text (the CR/LF may come from an interrupter)."""
        return cpus_of(self.body_writers)

    @property
    def records(self) -> List[Record]:
        found = [r for r in self.source[self.first.seq:self.last.seq + 1]
                 if r.reg == "THR" and not r.is_read]
        assert len(found) == len(self.data), "a wire line's records changed under it"
        return found

    @property
    def text(self) -> str:
        """The line without its CR/LF, as the transcript shows it."""
        return bytes(self.data).decode("utf-8", "replace").replace("\r", "").rstrip("\n")

    def __len__(self) -> int:
        return len(self.data)


def cpus_of(mask: int) -> set:
    return {None if bit == NONE_BIT else bit for bit in range(64) if mask >> bit & 1}


def wire_lines(log: UartLog, start_seq: int = 0) -> List[WireLine]:
    """THR writes from log record start_seq on, cut after every '\\n'."""
    lines, cur = [], WireLine(source=log.records)
    for r in log.records[start_seq:] if start_seq else log.records:
        if r.reg != "THR" or r.is_read:
            continue
        cur.add(r)
        if r.value == 0x0A:
            lines.append(cur)
            cur = WireLine(source=log.records)
    if cur.data:
        lines.append(cur)
    return lines


def find_line(lines: List[WireLine], text: str) -> Optional[WireLine]:
    """The first wire line whose text is exactly text."""
    return next((ln for ln in lines if ln.text == text), None)


def foreign_byte(line: WireLine, cpu: int) -> Optional[Record]:
    """The first byte of line's text not written by cpu, if any."""
    return next((r for r in line.records if r.cpu != cpu and r.value not in (0x0D, 0x0A)),
                None)


def marker(log: UartLog, value: int, after_seq: int = -1,
           cpu: Optional[int] = None) -> Optional[Record]:
    """The first MARKER record with value after log record after_seq, written
    by vCPU cpu if given: a tagged call's marker carries its per-CPU sequence
    number, not its CPU, so two CPUs' first calls mark the same value."""
    return next((r for r in log.records
                 if r.reg == "MARKER" and r.value == value and r.seq > after_seq
                 and (cpu is None or r.cpu == cpu)), None)


# --- timing on the wire ---------------------------------------------------------------

@dataclass(frozen=True)
class LineFormat:
    """What the guest programmed: baud rate and bits per character."""
    baud: float
    bits_per_char: int

    @property
    def char_ns(self) -> float:
        return self.bits_per_char * 1e9 / self.baud


def programmed_format(log: UartLog, before_seq: Optional[int] = None) -> LineFormat:
    """Baud rate (base baud / divisor) and character size (start bit, data
    bits, parity, stop bits) from the last DLL/DLM/LCR writes before a record."""
    dll = dlm = lcr = None
    for r in log.records:
        if before_seq is not None and r.seq >= before_seq:
            break
        if r.is_read:
            continue
        if r.reg == "DLL":
            dll = r.value
        elif r.reg == "DLM":
            dlm = r.value
        elif r.reg == "LCR":
            lcr = r.value
    if dll is None or lcr is None:
        raise ValueError("the log has no divisor latch or LCR write: baud rate unknown")
    divisor = (dlm or 0) << 8 | dll
    if divisor == 0:
        raise ValueError("divisor 0 programmed: baud rate undefined")
    bits = 1 + 5 + (lcr & 3) + (1 if lcr & 0x08 else 0) + (2 if lcr & 0x04 else 1)
    return LineFormat(log.header.baudbase / divisor, bits)


def wire_end_ns(log: UartLog, fmt: LineFormat) -> Dict[int, float]:
    """log seq of each THR write -> virtual time its last bit left the wire:
    the transmitter sends bytes in order, each one char time long, starting
    when it was written or when the one before it was done, whichever is later."""
    out, free = {}, 0.0
    for r in log.records:
        if r.reg == "THR" and not r.is_read:
            free = max(float(r.vtime_ns), free) + fmt.char_ns
            out[r.seq] = free
    return out


@dataclass(frozen=True)
class Latency:
    """From a point in virtual time (a printk() call) to the end of a line on
    the wire, against the line's own wire time at the programmed rate."""
    ns: float
    line_bytes: int
    physical_ns: float

    @property
    def ratio(self) -> float:
        return self.ns / self.physical_ns


def line_latency(log: UartLog, line: WireLine, since_ns: int,
                 fmt: Optional[LineFormat] = None) -> Latency:
    fmt = fmt or programmed_format(log, line.first.seq)
    end = wire_end_ns(log, fmt)[line.last.seq]
    return Latency(end - since_ns, len(line), len(line) * fmt.char_ns)


@dataclass(frozen=True)
class Window:
    """A stretch of one vCPU's time between two of its own markers."""
    cpu: int
    begin: Record
    end: Record

    @property
    def ns(self) -> int:
        return self.end.vtime_ns - self.begin.vtime_ns


def windows(log: UartLog, open_value, close_value) -> List[Window]:
    """Each vCPU's marker pairs: a marker for which open_value(v) is true,
    closed by that vCPU's next marker with value close_value(v_open)."""
    out, pending = [], {}
    for r in log.records:
        if r.reg != "MARKER" or r.cpu is None:
            continue
        opened = pending.get(r.cpu)
        if opened is not None and r.value == close_value(opened.value):
            out.append(Window(r.cpu, opened, r))
            pending.pop(r.cpu)
        elif open_value(r.value):
            pending[r.cpu] = r
    return out


def printed_by(lines: List[WireLine]) -> Dict[int, int]:
    """Log record -> the CPU field of the wire line its byte belongs to, for
    the lines that have one (the patched kernel's)."""
    out = {}
    for line in lines:
        m = logparse.CONSOLE_RE.match(line.text)
        if m and m.group("cpu"):
            out.update((r.seq, int(m.group("cpu"))) for r in line.records)
    return out


def own_wire_ns(log: UartLog, window: Window, fmt: LineFormat,
                skip: List[Window] = (), printers: Optional[Dict[int, int]] = None) -> float:
    """The wire time of the bytes the window's vCPU wrote to THR within it,
    leaving out those written within the windows in skip and, with printers
    (printed_by()), those of lines another CPU printed."""
    n = sum(1 for r in log.records
            if window.begin.seq < r.seq < window.end.seq and r.reg == "THR"
            and not r.is_read and r.cpu == window.cpu
            and (printers is None or printers.get(r.seq, r.cpu) == r.cpu)
            and not any(s.cpu == r.cpu and s.begin.seq < r.seq < s.end.seq for s in skip))
    return n * fmt.char_ns


def inside(window: Window, spans: List[Window]) -> List[Window]:
    """The spans of the window's vCPU that lie within the window."""
    return [s for s in spans if s.cpu == window.cpu
            and window.begin.seq < s.begin.seq and s.end.seq < window.end.seq]


# --- IER across the console writes -------------------------------------------------

def port_ier(log: UartLog, from_seq: int) -> int:
    """The port's own IER: the last non-zero value written before from_seq."""
    values = [r.value for r in log.records[:from_seq]
              if r.reg == "IER" and not r.is_read and r.value]
    return values[-1] if values else 0


def ier_problem(log: UartLog, from_seq: int) -> Optional[str]:
    """Console writes clear IER and restore what they found, however they nest:
    from log record from_seq on, IER is only ever 0 or the port's own value,
    and it ends with that value. The port's own value is the last non-zero IER
    written before from_seq (a write may be in progress there, with IER 0).
    None if that holds, else what broke it."""
    v0 = port_ier(log, from_seq)
    during = [r for r in log.records[from_seq:] if r.reg == "IER" and not r.is_read]
    odd = next((r for r in during if r.value not in (0, v0)), None)
    if odd is not None:
        return (f"IER {odd.value:#04x} written at log record {odd.seq} by vCPU {odd.cpu}; "
                f"the port's own value was {v0:#04x}")
    if not during:
        return "no IER write at all: no console write was logged"
    if during[-1].value != v0:
        return (f"IER {v0:#04x} before the console writes, {during[-1].value:#04x} after "
                f"(log record {during[-1].seq})")
    return None

