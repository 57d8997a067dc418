"""Reader for the rig-serial register log (format: qemu-devices/uart-log-format.md).

The C decoder qemu-devices/tools/uartlog.c reads the same format; both must
agree on a real log.
"""
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Union

MAGIC = b"RIGUART\0"
VERSION = 1
HEADER = struct.Struct("<8sIIIIIIII24x")      # 64 bytes
RECORD = struct.Struct("<QQHBBI")             # 24 bytes
NO_CPU = 0xFFFF

REG_NAMES = {0: "THR", 1: "IER", 2: "FCR", 3: "LCR", 4: "MCR", 5: "LSR", 6: "MSR",
             7: "SCR", 8: "DLL", 9: "DLM", 10: "IIR", 11: "RBR", 16: "MARKER", 17: "NMI"}
REG_CODES = {v: k for k, v in REG_NAMES.items()}
FLAG_READ = 0x01
FLAG_DLAB = 0x02


class UartLogError(ValueError):
    """The log is not a valid rig-serial log; the message names the offset."""


@dataclass(frozen=True)
class Header:
    version: int
    record_size: int
    header_size: int
    baudbase: int
    iobase: int
    irq: int
    marker_iobase: int
    flags: int


@dataclass(frozen=True)
class Record:
    seq: int
    vtime_ns: int
    cpu: Optional[int]     # None: the access did not come from a vCPU
    reg: str
    flags: int
    value: int

    @property
    def is_read(self) -> bool:
        return bool(self.flags & FLAG_READ)


@dataclass
class UartLog:
    header: Header
    records: List[Record]

    def writes(self, reg: str) -> List[Record]:
        return [r for r in self.records if r.reg == reg and not r.is_read]

    def thr_bytes(self, cpu: Optional[int] = None) -> bytes:
        """Bytes written to THR in log order (optionally only one vCPU's)."""
        return bytes(r.value for r in self.writes("THR") if cpu is None or r.cpu == cpu)

    def per_cpu_streams(self) -> Dict[Optional[int], bytes]:
        streams: Dict[Optional[int], bytearray] = {}
        for r in self.writes("THR"):
            streams.setdefault(r.cpu, bytearray()).append(r.value)
        return {k: bytes(v) for k, v in streams.items()}


def parse_header(data: bytes) -> Header:
    if len(data) < HEADER.size:
        raise UartLogError(f"log is {len(data)} bytes, shorter than its {HEADER.size}-byte "
                           "header: QEMU did not start the device, or the file is not a log")
    magic, version, rec_size, hdr_size, baud, iobase, irq, marker, flags = \
        HEADER.unpack_from(data)
    if magic != MAGIC:
        raise UartLogError(f"bad magic {magic!r} at offset 0 (expected {MAGIC!r}): "
                           "not a rig-serial log")
    if version != VERSION:
        raise UartLogError(f"log format version {version} at offset 8; this reader knows "
                           f"version {VERSION}")
    if rec_size != RECORD.size or hdr_size != HEADER.size:
        raise UartLogError(f"record size {rec_size} / header size {hdr_size} at offset 12 "
                           f"do not match version {VERSION} ({RECORD.size} / {HEADER.size})")
    return Header(version, rec_size, hdr_size, baud, iobase, irq, marker, flags)


def iter_records(data: bytes, header: Header) -> Iterator[Record]:
    body = len(data) - header.header_size
    if body % header.record_size:
        off = header.header_size + (body // header.record_size) * header.record_size
        raise UartLogError(f"log truncated: {body % header.record_size} stray bytes of a "
                           f"partial record at offset {off} (file is {len(data)} bytes)")
    expected = 0
    for off in range(header.header_size, len(data), header.record_size):
        seq, vtime, cpu, reg, flags, value = RECORD.unpack_from(data, off)
        if seq != expected:
            raise UartLogError(f"record at offset {off} has seq {seq}, expected {expected}: "
                               "records missing or corrupted")
        expected += 1
        yield Record(seq, vtime, None if cpu == NO_CPU else cpu,
                     REG_NAMES.get(reg, f"reg{reg}"), flags, value)


def parse(data: bytes) -> UartLog:
    header = parse_header(data)
    return UartLog(header, list(iter_records(data, header)))


def read(path: Union[str, Path]) -> UartLog:
    p = Path(path)
    try:
        return parse(p.read_bytes())
    except UartLogError as e:
        raise UartLogError(f"{p}: {e}") from None


def pack_header(baudbase=115200, iobase=0x3F8, irq=4, marker_iobase=0x4F0, flags=0,
                version=VERSION, magic=MAGIC) -> bytes:
    """Encode a header (for tests and tools that write logs)."""
    return HEADER.pack(magic, version, RECORD.size, HEADER.size, baudbase, iobase, irq,
                       marker_iobase, flags)


def pack_record(seq, vtime_ns, cpu, reg, value, flags=0) -> bytes:
    code = REG_CODES[reg] if isinstance(reg, str) else reg
    return RECORD.pack(seq, vtime_ns, NO_CPU if cpu is None else cpu, code, flags, value)


def between_markers(log: UartLog, first: int, last: int,
                    cpu: Optional[int] = None) -> List[Record]:
    """Records after the first MARKER `first` and before the next MARKER `last`,
    both written by vCPU cpu if given (two CPUs may mark the same value)."""
    def is_marker(r: Record, value: int) -> bool:
        return r.reg == "MARKER" and r.value == value and (cpu is None or r.cpu == cpu)
    start = next((i for i, r in enumerate(log.records) if is_marker(r, first)), None)
    if start is None:
        raise UartLogError(f"no marker {first:#x} in the log"
                           + (f" from vCPU {cpu}" if cpu is not None else ""))
    end = next((i for i in range(start + 1, len(log.records))
                if is_marker(log.records[i], last)), None)
    if end is None:
        raise UartLogError(f"marker {first:#x} at record {start} has no marker {last:#x} after it")
    return log.records[start + 1:end]


def char_time_ns(baud: int = 115200, bits_per_char: int = 10) -> float:
    """Wire time of one character: 8N1 is 10 bits."""
    return bits_per_char * 1e9 / baud
