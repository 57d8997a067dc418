"""rig diff on logs of any size, in bounded memory.

Both logs are read as streams of records (rig.evidence.logread,
logdiff.events). Logs that fit in one window (WINDOW records each) are
compared whole, exactly as rig.evidence.logdiff does. Longer ones are
compared a window at a time: the two windows are aligned, and the part up
to a cut in the middle of their last long run of equal records (away from
the windows' ends, where a longer look might align otherwise) is judged
and written out; the rest is carried into the next window. The cut lies in
a run of more than twice the unified diff's context, so the hunks are
those of a diff of the whole logs. What a window cannot see is said in
docs/tools.md: a record that moved farther than a window is reported
missing in one place and extra in another, and per-CPU order and split
lines are compared within a window.

The differences and the unified diff are spooled to temporary files, for
the counts come first in the output; memory holds two windows at most.
"""
import hashlib
import json
import sys
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import IO, Iterator, List, Optional, Tuple

from rig.evidence import logalign
from rig.evidence.logdiff import (Difference, Log, Record, Result, collect, compare, events,
                                  fmt_dropped, format_text, paint_diff_line,
                                  paint_difference, render, shared_fields, unified)
from rig.evidence.logread import MAX_DECOMPRESSED, LogInputError, LogSource

WINDOW = 40_000          # records of each log held at once
MARGIN = WINDOW // 4     # a cut is never this close to a window's end
CONTEXT = 3              # the unified diff's lines of context
DROPPED_SHOWN = 50       # dropped counts listed in the message


@dataclass
class Side:
    """One log, read as a stream: the records not yet judged, and what is
    counted over the whole log."""
    name: str
    stream: Iterator[Tuple[str, object]]
    pending: List[Record] = field(default_factory=list)
    split: list = field(default_factory=list)
    interleaved: list = field(default_factory=list)
    done: bool = False
    records: int = 0                 # judged so far
    carried: Counter = field(default_factory=Counter)     # records with a level, a CPU
    dropped: list = field(default_factory=list)            # the first DROPPED_SHOWN
    dropped_total: int = 0
    dropped_digest: "hashlib._Hash" = field(default_factory=hashlib.sha256)

    def fill(self, upto: int) -> None:
        """Read until the window holds upto records, split and interleaved
        lines (all of which a window judges and holds) or the log ends."""
        while len(self.pending) + len(self.split) + len(self.interleaved) < upto and \
                not self.done:
            try:
                kind, what = next(self.stream)
            except StopIteration:
                self.done = True
                break
            if kind == "record":
                self.pending.append(what)
            elif kind == "dropped":
                self.dropped_total += 1
                self.dropped_digest.update(f"{what[1]}\n".encode())
                if len(self.dropped) < DROPPED_SHOWN:
                    self.dropped.append(what)
            else:
                getattr(self, kind).append(what)

    def take(self, n: int) -> Log:
        """The first n pending records as a Log to judge (with the split and
        interleaved lines read meanwhile)."""
        part = Log(self.name, self.pending[:n], [], self.split, self.interleaved)
        del self.pending[:n]
        self.split, self.interleaved = [], []
        self.records += n
        self.carried.update(level=sum(r.level is not None for r in part.records),
                            cpu=sum(r.cpu is not None for r in part.records))
        return part


def cut(ops, len_a: int, len_b: int, a_done: bool, b_done: bool) -> Tuple[int, int]:
    """How many records of each window to judge now: up to the middle of the
    last run of more than 2*CONTEXT equal records that starts before both
    windows' margins, CONTEXT records before its end or at the margin. With
    none that far along, the windows up to their margins: a stretch this
    different is judged as it stands."""
    limit_a = len_a if a_done else len_a - MARGIN
    limit_b = len_b if b_done else len_b - MARGIN
    for tag, i1, i2, j1, j2 in reversed(ops):
        if tag == "equal" and i2 - i1 > 2 * CONTEXT and \
                i1 + CONTEXT <= limit_a and j1 + CONTEXT <= limit_b:
            k = min(i2 - i1 - CONTEXT, limit_a - i1, limit_b - j1)
            if i1 + k >= MARGIN or j1 + k >= MARGIN or (a_done and b_done):
                return i1 + k, j1 + k
            break
    return max(limit_a, 0), max(limit_b, 0)


class Spool:
    """Lines written now and read back at the end, from a temporary file."""

    def __init__(self):
        self.file = tempfile.TemporaryFile("w+", encoding="utf-8")
        self.count = 0

    def add(self, line: str) -> None:
        self.file.write(line + "\n")
        self.count += 1

    def lines(self) -> Iterator[str]:
        self.file.seek(0)
        for line in self.file:
            yield line[:-1]


def diff(path_a, path_b, ts_tolerance_s: Optional[float], masked: bool, as_json: bool,
         colour: bool, out: IO[str], max_decompressed: int = MAX_DECOMPRESSED) -> bool:
    """Write the diff of two logs to out; True if they are equal."""
    with LogSource(path_a, max_decompressed=max_decompressed) as src_a, \
            LogSource(path_b, max_decompressed=max_decompressed) as src_b:
        a = Side(src_a.name, events(src_a.lines(), masked))
        b = Side(src_b.name, events(src_b.lines(), masked))
        a.fill(WINDOW)
        b.fill(WINDOW)
        if a.done and b.done:           # both fit: the whole logs, as logdiff compares them
            la = collect(a.name, [("record", r) for r in a.pending])
            la.split, la.interleaved, la.dropped = a.split, a.interleaved, a.dropped
            lb = collect(b.name, [("record", r) for r in b.pending])
            lb.split, lb.interleaved, lb.dropped = b.split, b.interleaved, b.dropped
            res = Result(la, lb, compare(la, lb, ts_tolerance_s), unified(la, lb))
            out.write(json.dumps(res.to_json(), indent=1) + "\n" if as_json
                      else format_text(res, colour))
            return res.equal
        return windowed(a, b, ts_tolerance_s, as_json, colour, out)


def windowed(a: Side, b: Side, ts_tolerance_s, as_json: bool, colour: bool, out) -> bool:
    differences, hunks = Spool(), Spool()
    counts: Counter = Counter()
    headers = False
    while a.pending or b.pending or not (a.done and b.done):
        a.fill(WINDOW)
        b.fill(WINDOW)
        ka, kb = [r.key for r in a.pending], [r.key for r in b.pending]
        ca, cb = cut(logalign.align(ka, kb), len(ka), len(kb), a.done, b.done)
        offset_a, offset_b = a.records, b.records
        la, lb = a.take(ca), b.take(cb)
        for d in compare(la, lb, ts_tolerance_s):
            if d.kind == "note":
                continue        # said once, for the whole logs, at the end
            counts[d.kind] += 1
            differences.add(json.dumps(asdict(d)) if as_json else paint_difference(d, colour))
        fields = shared_fields(la, lb)
        ra, rb = [render(r, fields) for r in la.records], [render(r, fields) for r in lb.records]
        for line in logalign.unified(ra, rb, logalign.align(ra, rb), a.name, b.name, CONTEXT,
                                     offsets=(offset_a, offset_b), headers=not headers):
            headers = True
            hunks.add(json.dumps(line) if as_json else paint_diff_line(line, colour))
    notes = whole_log_notes(a, b)
    if a.dropped_digest.digest() != b.dropped_digest.digest():
        d = Difference("dropped", f"dropped counts A {dropped_text(a)}, B {dropped_text(b)}")
        counts[d.kind] += 1
        differences.add(json.dumps(asdict(d)) if as_json else paint_difference(d, colour))
    equal = not counts and hunks.count == 0
    if as_json:
        write_json(a, b, equal, counts, notes, differences, hunks, out)
    else:
        write_text(a, b, equal, counts, notes, differences, hunks, colour, out)
    return equal


def whole_log_notes(a: Side, b: Side) -> List[Difference]:
    out = []
    for attr, what in (("level", "level"), ("cpu", "CPU field")):
        na, nb = a.carried[attr], b.carried[attr]
        if bool(na) != bool(nb):
            side, n, total = ("A", na, a.records) if na else ("B", nb, b.records)
            out.append(Difference("note", f"{what} only in {side} ({n} of {total} records), "
                                          f"not compared"))
    return out


def dropped_text(side: Side) -> str:
    shown = fmt_dropped(Log(side.name, dropped=side.dropped))
    more = side.dropped_total - len(side.dropped)
    return shown[:-1] + (f", and {more} more" if more else "") + "]"


def write_text(a, b, equal, counts, notes, differences, hunks, colour, out) -> None:
    out.write(f"A: {a.name} ({a.records} records)\nB: {b.name} ({b.records} records)\n")
    for d in notes:
        out.write(f"note: {d.detail}\n")
    if equal:
        out.write("equal\n")
        return
    out.write("differences: " + (", ".join(f"{n} {k}" for k, n in counts.items())
                                 or "none by record, text differs") + "\n")
    for line in differences.lines():
        out.write(line + "\n")
    for d in notes:
        out.write(paint_difference(d, colour) + "\n")
    for line in hunks.lines():
        out.write(line + "\n")


def write_json(a, b, equal, counts, notes, differences, hunks, out) -> None:
    """The JSON of logdiff.Result.to_json, its two long arrays streamed."""
    head = {"a": {"path": a.name, "records": a.records},
            "b": {"path": b.name, "records": b.records},
            "equal": equal, "counts": dict(counts)}
    out.write(json.dumps(head, indent=1)[:-2] + ',\n "differences": [')
    first = True
    for item in [json.dumps(asdict(d)) for d in notes] + list(differences.lines()):
        out.write(("\n  " if first else ",\n  ") + item)
        first = False
    out.write('\n ],\n "unified_diff": [')
    first = True
    for item in hunks.lines():
        out.write(("\n  " if first else ",\n  ") + item)
        first = False
    out.write("\n ]\n}\n")


def main(path_a: str, path_b: str, as_json: bool, ts_tolerance_s: Optional[float],
         masked: bool, colour: bool, out, max_decompressed: int = MAX_DECOMPRESSED) -> int:
    if path_a == path_b == "-":
        print("rig diff: both logs are '-': standard input holds one log; give the other "
              "as a file", file=sys.stderr)
        return 2
    try:
        return 0 if diff(path_a, path_b, ts_tolerance_s, masked, as_json, colour, out,
                         max_decompressed) else 1
    except LogInputError as e:
        print(f"rig diff: {e}", file=sys.stderr)
        return 2
