"""Reader for the rig-serial register log (format: qemu-devices/uart-log-format.md).

The C decoder qemu-devices/tools/uartlog.c reads the same format; both must
agree on a real log. Every record is checked for values the device can
write (vCPU, register, flags, value, time), so a damaged file is named at
its first impossible record instead of decoding into nonsense; version 2
logs also say how many records QEMU logged and lost (shortfall()).

A log read from a file is not held in memory: its records are a Records
sequence over the file (fixed-size records: record i is at a known offset),
checked in one streamed pass when it is opened and read again, a chunk at a
time, by whoever iterates or indexes them. A long flood's log of a gigabyte
decodes in the memory of one chunk.
"""
import errno
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from functools import lru_cache
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

from rig.faults import EvidenceIncomplete

MAGIC = b"RIGUART\0"
VERSION = 2
VERSIONS = (1, 2)
HEADER = struct.Struct("<8sIIIIIIII24x")      # 64 bytes, version 1
COUNTS = struct.Struct("<IIQII")              # version 2: offset 40 of the header
COUNTS_OFFSET = 40
STATE_OPEN, STATE_CLOSED = 0, 1
RECORD = struct.Struct("<QQHBBI")             # 24 bytes
NO_CPU = 0xFFFF

REG_NAMES = {0: "THR", 1: "IER", 2: "FCR", 3: "LCR", 4: "MCR", 5: "LSR", 6: "MSR",
             7: "SCR", 8: "DLL", 9: "DLM", 10: "IIR", 11: "RBR", 16: "MARKER", 17: "NMI"}
REG_CODES = {v: k for k, v in REG_NAMES.items()}
FLAG_READ = 0x01
FLAG_DLAB = 0x02
READ_REGS = ("LSR", "IIR")            # the only reads the device logs
DLAB_REGS = ("DLL", "DLM")            # only reached with DLAB set
BYTE_REGS = tuple(n for n in REG_NAMES.values() if n not in ("MARKER", "NMI"))


class UartLogError(EvidenceIncomplete, ValueError):
    """The log is not a valid rig-serial log; the message names the offset."""


class MarkerError(ValueError):
    """A marker the test module writes is not in a whole log: a fact about
    the guest (a call that never returned), not damaged evidence."""


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
    # Version 2 only (None in version 1): the machine's vCPUs, and the
    # counts QEMU writes when it ends (state STATE_CLOSED).
    cpus: Optional[int] = None
    state: Optional[int] = None
    records: Optional[int] = None
    lost: Optional[int] = None
    error: Optional[int] = None


class Record(NamedTuple):
    """One logged access (a tuple: a long run's log holds millions)."""
    seq: int
    vtime_ns: int
    cpu: Optional[int]     # None: the access did not come from a vCPU
    reg: str
    flags: int
    value: int

    @property
    def is_read(self) -> bool:
        return bool(self.flags & FLAG_READ)


CHUNK_RECORDS = 1 << 16           # records read at a time (1.5 MiB)


class Records(Sequence):
    """The records of a log, decoded as they are used: iteration reads
    CHUNK_RECORDS at a time, an index or a slice reads only those. The
    bytes come from a file (by path) or from memory."""

    def __init__(self, source: Union[str, bytes, memoryview], offset: int, count: int):
        self._source = source       # a path, or the records' bytes
        self._offset = offset       # of record 0 in the source
        self._count = count

    def __len__(self) -> int:
        return self._count

    def _bytes(self, first: int, n: int) -> bytes:
        start, size = self._offset + first * RECORD.size, n * RECORD.size
        if isinstance(self._source, str):
            with open(self._source, "rb") as f:
                f.seek(start)
                data = f.read(size)
            if len(data) != size:
                raise UartLogError(f"{self._source}: log truncated at offset "
                                   f"{start + len(data)} after it was checked")
            return data
        return bytes(self._source[start:start + size])

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, step = i.indices(self._count)
            if step != 1:
                return list(self)[i]
            return Records(self._source, self._offset + start * RECORD.size,
                           max(0, stop - start))
        if i < 0:
            i += self._count
        if not 0 <= i < self._count:
            raise IndexError("record index out of range")
        return record(*RECORD.unpack(self._bytes(i, 1)))

    def rows(self) -> Iterator[List[tuple]]:
        """The raw rows, a chunk at a time."""
        for first in range(0, self._count, CHUNK_RECORDS):
            n = min(CHUNK_RECORDS, self._count - first)
            yield list(RECORD.iter_unpack(self._bytes(first, n)))

    def __iter__(self) -> Iterator[Record]:
        for rows in self.rows():
            yield from (record(*row) for row in rows)

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and \
            all(a == b for a, b in zip(self, other))


@dataclass
class UartLog:
    header: Header
    records: Sequence[Record]        # a list, or Records over the file

    def writes(self, reg: str) -> Iterator[Record]:
        return (r for r in self.records if r.reg == reg and not r.is_read)

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
    if version not in VERSIONS:
        raise UartLogError(f"log format version {version} at offset 8; this reader knows "
                           f"versions {', '.join(map(str, VERSIONS))}")
    if rec_size != RECORD.size or hdr_size != HEADER.size:
        raise UartLogError(f"record size {rec_size} / header size {hdr_size} at offset 12 "
                           f"do not match version {version} ({RECORD.size} / {HEADER.size})")
    if version == 1:
        return Header(version, rec_size, hdr_size, baud, iobase, irq, marker, flags)
    cpus, state, records, lost, error = COUNTS.unpack_from(data, COUNTS_OFFSET)
    if not 1 <= cpus < NO_CPU:
        raise UartLogError(f"{cpus} vCPUs at offset {COUNTS_OFFSET}: a damaged header")
    if state not in (STATE_OPEN, STATE_CLOSED) or lost > records:
        raise UartLogError(f"state {state}, {lost} of {records} records lost at offset "
                           f"{COUNTS_OFFSET + 4}: a damaged header")
    return Header(version, rec_size, hdr_size, baud, iobase, irq, marker, flags,
                  cpus, state, records, lost, error)


def impossible(rec: Record, cpus: Optional[int], prev_ns: int) -> Optional[str]:
    """Why the device cannot have written this record; None if it can."""
    if rec.reg.startswith("reg"):
        return f"unknown register code {rec.reg[3:]}"
    if rec.cpu is not None and cpus is not None and rec.cpu >= cpus:
        return f"vCPU {rec.cpu} on a machine of {cpus}"
    if rec.flags & ~(FLAG_READ | FLAG_DLAB):
        return f"unknown flags {rec.flags:#04x}"
    if rec.is_read != (rec.reg in READ_REGS):
        return f"a {'read' if rec.is_read else 'write'} of {rec.reg}, which the device " \
               f"logs only as {'a write' if rec.is_read else 'a read'}"
    if rec.reg in DLAB_REGS and not rec.flags & FLAG_DLAB:
        return f"{rec.reg} without DLAB"
    if rec.reg in BYTE_REGS and rec.value > 0xFF:
        return f"value {rec.value:#x} in the 8-bit register {rec.reg}"
    if rec.reg == "NMI" and cpus is not None and rec.value >= cpus:
        return f"an NMI for vCPU {rec.value} on a machine of {cpus}"
    if rec.vtime_ns < prev_ns:
        return f"virtual time {rec.vtime_ns} ns before the previous record's {prev_ns} ns"
    return None


def record(seq: int, vtime: int, cpu: int, reg: int, flags: int, value: int) -> Record:
    """A record decoded from its fields as the file holds them."""
    return Record(seq, vtime, None if cpu == NO_CPU else cpu, REG_NAMES.get(reg) or f"reg{reg}",
                  flags, value)


def check(records: Records, header: Header, cpus: Optional[int]) -> None:
    """One streamed pass over every record: consecutive seqs from 0, time
    that never goes back, values the device can write (each distinct kind
    judged once). A chunk that fails the fast check is read again record by
    record to name the first bad one (UartLogError with its offset)."""
    known = header.cpus if header.cpus is not None else cpus
    expected, prev_ns, kinds = 0, 0, set()
    for rows in records.rows():
        if not chunk_ok(rows, expected, prev_ns, known, kinds):
            name_first_bad(rows, expected, prev_ns, known, header)
        expected += len(rows)
        prev_ns = rows[-1][1]


def kind_of(row: tuple) -> tuple:
    """(vCPU, register, flags, value) of a row; a marker's value is not
    checked, or every marker would be a kind of its own."""
    _, _, cpu, reg, flags, value = row
    return cpu, reg, flags, value if REG_NAMES.get(reg) != "MARKER" else 0


def chunk_ok(rows: List[tuple], expected: int, prev_ns: int, cpus: Optional[int],
             kinds: set) -> bool:
    """The fast check of a chunk; kinds: those already found possible."""
    if any(row[0] != expected + i for i, row in enumerate(rows)):
        return False
    times = [prev_ns] + [row[1] for row in rows]
    if any(a > b for a, b in zip(times, times[1:])):
        return False
    fresh = {kind_of(row) for row in rows} - kinds
    if any(impossible(record(0, 0, *k), cpus, 0) for k in fresh):
        return False
    kinds |= fresh
    return True


def name_first_bad(rows: List[tuple], expected: int, prev_ns: int, cpus: Optional[int],
                   header: Header) -> None:
    """Raise UartLogError for the chunk's first bad record."""
    for i, row in enumerate(rows):
        rec = record(*row)
        off = header.header_size + (expected + i) * header.record_size
        if rec.seq != expected + i:
            raise UartLogError(f"record at offset {off} has seq {rec.seq}, expected "
                               f"{expected + i}: records missing or corrupted")
        why = impossible(rec, cpus, prev_ns)
        if why:
            raise UartLogError(f"record {rec.seq} at offset {off} cannot be: {why} "
                               "(a damaged file)")
        prev_ns = rec.vtime_ns
    raise AssertionError("a chunk failed its check but no record of it did")


def body_records(source, size: int, header: Header) -> Records:
    """The records after the header; a partial last record is named."""
    body = size - header.header_size
    if body % header.record_size:
        off = header.header_size + (body // header.record_size) * header.record_size
        raise UartLogError(f"log truncated: {body % header.record_size} stray bytes of a "
                           f"partial record at offset {off} (file is {size} bytes)")
    return Records(source, header.header_size, body // header.record_size)


def parse(data: bytes, cpus: Optional[int] = None) -> UartLog:
    """A log in memory, checked."""
    header = parse_header(data)
    records = body_records(memoryview(data), len(data), header)
    check(records, header, cpus)
    return UartLog(header, records)


def read(path: Union[str, Path], cpus: Optional[int] = None) -> UartLog:
    """The log at path, checked in one streamed pass and read from the file
    as it is used; the last few are kept, keyed by the file's size and
    modification time, as a boot's completeness check and its evidence both
    read it."""
    p = Path(path)
    try:
        st = p.stat()
        with open(p, "rb") as f:
            if parse_header(f.read(HEADER.size)).version >= 2:
                cpus = None         # the header says; one check serves every reader
        return _read(str(p.resolve()), st.st_size, st.st_mtime_ns, cpus)
    except UartLogError as e:
        raise UartLogError(f"{p}: {e}") from None


@lru_cache(maxsize=4)
def _read(path: str, size: int, mtime_ns: int, cpus: Optional[int]) -> UartLog:
    with open(path, "rb") as f:
        header = parse_header(f.read(HEADER.size))
    records = body_records(path, size, header)
    check(records, header, cpus)
    return UartLog(header, records)


def shortfall(log: UartLog) -> Optional[str]:
    """What a version-2 log that QEMU closed lacks: records lost to a failed
    write, or fewer in the file than QEMU wrote; None when it is whole, or
    cannot tell (version 1, or QEMU did not close it: killed)."""
    h = log.header
    if h.version < 2 or h.state != STATE_CLOSED:
        return None
    written = h.records - h.lost
    held = f"holds {len(log.records)} of the {h.records} records QEMU logged"
    if h.lost:
        why = os.strerror(h.error) if h.error else "unknown error"
        name = errno.errorcode.get(h.error, "")
        return f"{held}: QEMU could not write {h.lost} ({name + ': ' if name else ''}{why})"
    if len(log.records) != written:
        return f"{held}: the file lost records after QEMU wrote them"
    return None


def pack_header(baudbase=115200, iobase=0x3F8, irq=4, marker_iobase=0x4F0, flags=0,
                version=VERSION, magic=MAGIC, cpus=2, state=STATE_OPEN, records=0, lost=0,
                error=0) -> bytes:
    """Encode a header (for tests and tools that write logs)."""
    head = HEADER.pack(magic, version, RECORD.size, HEADER.size, baudbase, iobase, irq,
                       marker_iobase, flags)
    if version < 2:
        return head
    return (head[:COUNTS_OFFSET] + COUNTS.pack(cpus, state, records, lost, error))


def pack_record(seq, vtime_ns, cpu, reg, value, flags=0) -> bytes:
    """Encode a record; DLL and DLM get the DLAB flag they always carry."""
    code = REG_CODES[reg] if isinstance(reg, str) else reg
    if REG_NAMES.get(code) in DLAB_REGS:
        flags |= FLAG_DLAB
    return RECORD.pack(seq, vtime_ns, NO_CPU if cpu is None else cpu, code, flags, value)


def between_markers(log: UartLog, first: int, last: int,
                    cpu: Optional[int] = None) -> List[Record]:
    """Records after the first MARKER `first` and before the next MARKER `last`,
    both written by vCPU cpu if given (two CPUs may mark the same value);
    see call_span for a caller that moved."""
    return call_span(log, first, last, cpu)[0]


def call_span(log: UartLog, first: int, last: int,
              cpu: Optional[int] = None) -> Tuple[List[Record], Optional[int]]:
    """between_markers, and the vCPU that wrote the closing marker. A task
    that is not pinned may move to another CPU during its call: when no
    `last` of vCPU cpu follows its `first`, the first `last` of a vCPU that
    did not mark `first` itself meanwhile (not a call of its own with the
    same marker) closes the span."""
    def is_marker(r: Record, value: int) -> bool:
        return r.reg == "MARKER" and r.value == value
    start, between, moved, began = None, [], None, set()
    for r in log.records:
        if start is None:
            if is_marker(r, first) and (cpu is None or r.cpu == cpu):
                start = r.seq
        elif is_marker(r, last) and (cpu is None or r.cpu == cpu):
            return between, r.cpu
        else:
            if is_marker(r, first):
                began.add(r.cpu)
            elif is_marker(r, last) and moved is None and r.cpu not in began:
                moved = (len(between), r.cpu)
            between.append(r)
    if start is None:
        raise MarkerError(f"no marker {first:#x} in the log"
                          + (f" from vCPU {cpu}" if cpu is not None else ""))
    if moved is not None:
        return between[:moved[0]], moved[1]
    raise MarkerError(f"marker {first:#x} at record {start} has no marker {last:#x} after it")


def char_time_ns(baud: int = 115200, bits_per_char: int = 10) -> float:
    """Wire time of one character: 8N1 is 10 bits."""
    return bits_per_char * 1e9 / baud
