"""What the UART register log says about console lines on the wire: the THR
byte stream cut into lines, each byte with the vCPU that wrote it and its
virtual time, and IER across the console writes.

This is evidence the transcript alone cannot give: who wrote each byte and
when, so that contiguity ("no foreign byte inside an emergency line"),
immediacy ("all bytes between these markers") and latency are read off
exactly.
"""
from dataclasses import dataclass, field
from typing import List, Optional

from rig.uartlog import Record, UartLog


@dataclass
class WireLine:
    """One line as the UART sent it: the bytes up to and including '\\n'."""
    records: List[Record] = field(default_factory=list)

    @property
    def data(self) -> bytes:
        return bytes(r.value for r in self.records)

    @property
    def text(self) -> str:
        """The line without its CR/LF, as the transcript shows it."""
        return self.data.decode("utf-8", "replace").replace("\r", "").rstrip("\n")

    @property
    def cpus(self) -> set:
        return {r.cpu for r in self.records}

    @property
    def body_cpus(self) -> set:
        """vCPUs that wrote the text (the CR/LF may come from an interrupter)."""
        return {r.cpu for r in self.records if r.value not in (0x0D, 0x0A)}

    @property
    def first(self) -> Record:
        return self.records[0]

    @property
    def last(self) -> Record:
        return self.records[-1]


def wire_lines(log: UartLog, start_seq: int = 0) -> List[WireLine]:
    """THR writes from log record start_seq on, cut after every '\\n'."""
    lines, cur = [], WireLine()
    for r in log.records:
        if r.seq < start_seq or r.reg != "THR" or r.is_read:
            continue
        cur.records.append(r)
        if r.value == 0x0A:
            lines.append(cur)
            cur = WireLine()
    if cur.records:
        lines.append(cur)
    return lines


def find_line(lines: List[WireLine], text: str) -> Optional[WireLine]:
    """The first wire line whose text is exactly text."""
    return next((ln for ln in lines if ln.text == text), None)


def foreign_byte(line: WireLine, cpu: int) -> Optional[Record]:
    """The first byte of line's text not written by cpu, if any."""
    return next((r for r in line.records if r.cpu != cpu and r.value not in (0x0D, 0x0A)),
                None)


def marker(log: UartLog, value: int, after_seq: int = -1) -> Optional[Record]:
    """The first MARKER record with value after log record after_seq."""
    return next((r for r in log.records
                 if r.reg == "MARKER" and r.value == value and r.seq > after_seq), None)
