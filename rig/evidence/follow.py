"""What a /dev/kmsg reader that falls behind saw (rig/guest/kmsgtest.c
"follow", S9), and whether every record it missed is accounted for by an
EPIPE: the ABI promises that a reader whose next record was overwritten gets
EPIPE once and then continues with the oldest record still there, so a jump
in the sequence numbers without an EPIPE is a silent loss.

The log has one line per event:
    r SEQ CPU CTX TAGSEQ    a record (the test module's tag, or "- - -")
    EPIPE                   an overrun
    end RECORDS EPIPES      the reader reached the run's last record
"""
from dataclasses import dataclass, field
from typing import List, Optional

from rig.faults import RigFault


class FollowLogError(RigFault, ValueError):
    pass


@dataclass(frozen=True)
class FollowRecord:
    seq: int
    cpu: Optional[int]
    ctx: Optional[str]
    tag_seq: Optional[int]
    after_epipe: bool       # an EPIPE came between the previous record and this one


@dataclass
class FollowLog:
    records: List[FollowRecord] = field(default_factory=list)
    epipes: int = 0
    ended: bool = False     # the "end" line: the reader got to the stop record


def parse_follow(data: bytes) -> FollowLog:
    log, epipe = FollowLog(), False
    for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        f = line.split()
        if f[:1] == ["EPIPE"]:
            log.epipes += 1
            epipe = True
        elif f[:1] == ["r"] and len(f) == 5:
            tagged = f[2] != "-"
            try:
                log.records.append(FollowRecord(int(f[1]), int(f[2]) if tagged else None,
                                                f[3] if tagged else None,
                                                int(f[4]) if tagged else None, epipe))
            except ValueError as e:
                raise FollowLogError(f"follow log line {n}: {line!r}: {e}") from e
            epipe = False
        elif f[:1] == ["end"] and len(f) == 3:
            if int(f[1]) != len(log.records) or int(f[2]) != log.epipes:
                raise FollowLogError(f"follow log line {n}: {line!r}, but {len(log.records)} "
                                     f"records and {log.epipes} EPIPEs are listed")
            log.ended = True
        else:
            raise FollowLogError(f"follow log line {n}: unexpected {line!r}")
    return log


def sequence_problems(log: FollowLog) -> List[str]:
    """Every jump in the sequence numbers follows an EPIPE, every EPIPE is
    followed by a jump forward, and no record is read twice."""
    out = []
    for a, b in zip(log.records, log.records[1:]):
        if b.seq <= a.seq:
            out.append(f"the reader got seq {b.seq} after seq {a.seq}: read twice or backwards")
        elif b.after_epipe and b.seq == a.seq + 1:
            out.append(f"EPIPE between seq {a.seq} and seq {b.seq}, but nothing was skipped")
        elif not b.after_epipe and b.seq != a.seq + 1:
            out.append(f"the reader went from seq {a.seq} to seq {b.seq} without an EPIPE: "
                       f"{b.seq - a.seq - 1} records silently skipped")
    return out


def missed_problems(log: FollowLog, cpu: int, ctx: str, count: int) -> List[str]:
    """Each of the count tagged records of (cpu, ctx) was read, or fell into a
    gap that an EPIPE reported, and the records missed between two that were
    read are no more than the EPIPE gaps between those two span. A CPU prints
    its records in order, so its tag order is the ringbuffer's order."""
    recs = log.records
    mine = [(i, r.tag_seq) for i, r in enumerate(recs) if r.cpu == cpu and r.ctx == ctx]
    seen = {t for _, t in mine}
    out = []
    # Consecutive records read, as (log position, tag seq), with sentinels for
    # "before the first record" and "after the last".
    marks = [(-1, -1)] + mine + [(len(recs), count)]
    for (i, lo), (j, hi) in zip(marks, marks[1:]):
        missed = [k for k in range(lo + 1, min(hi, count)) if k not in seen]
        if not missed:
            continue
        window = recs[max(i, 0):min(j, len(recs) - 1) + 1]
        gaps = [b.seq - a.seq - 1 for a, b in zip(window, window[1:]) if b.after_epipe]
        # An overrun before the very first read: its width is unknown.
        leading = i < 0 and bool(recs) and recs[0].after_epipe
        name = f"cpu{cpu}#{missed[0]}" + (f"..#{missed[-1]}" if len(missed) > 1 else "")
        if not gaps and not leading:
            out.append(f"record {name} ({len(missed)}) missing from the /dev/kmsg reader "
                       f"with no EPIPE around it")
        elif not leading and len(missed) > sum(gaps):
            out.append(f"record {name}: {len(missed)} records missing, the EPIPE gaps "
                       f"around them span only {sum(gaps)} sequence numbers")
    return out
