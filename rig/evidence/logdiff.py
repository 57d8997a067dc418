"""rig diff: compare two kernel logs as printk records, not as text.

Either side may be any kernel log: a serial transcript (ours or anyone's),
`dmesg` output (plain, `--decode`d or `--raw` with `<N>` prefixes), a
syslog(2) dump, with or without CONFIG_PRINTK_CALLER's `[T123]`/`[C1]` field
or the seed's `001: ` CPU field, with LF or CRLF line ends. A run directory
stands for its console.log.

Records are matched on their text after masking what differs from run to
run (addresses, register values, pids, hashes); timestamps are ignored unless
a tolerance is given. Reported, in this order: missing and extra records,
records that moved, records whose text changed (a similar record in its
place), per-CPU order changes, a level or CPU field only one log has, level
and CPU changes of matched records, timestamps beyond the tolerance, changed
dropped counts, lines cut short (split) or holding two records (interleaved),
then a unified diff of the normalized text.
"""
import bisect
import difflib
import itertools
import re
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

from rig.evidence import logalign, logparse
from rig.evidence.logread import LogInputError, LogSource
from rig.evidence.window import windowed

LEVELS = {"emerg": 0, "alert": 1, "crit": 2, "err": 3, "warn": 4, "notice": 5, "info": 6,
          "debug": 7}
# A line cut short may end inside its prefix: "[    1.309" or "[    1.309000] 0".
PARTIAL_PREFIX_RE = re.compile(r"^(?:<\d{0,3}>?)?(?:\[[\s\d.]*\]?)?(?:\[\s*[TC]?\d*\]?)?"
                               r"(?: ?\d{1,3}(?::(?: |$)|$))?")
MASKS = [
    (re.compile(r"\b[0-9a-f]{32,64}\b"), "<hash>"),
    (re.compile(r"\b0x[0-9a-fA-F]{6,}\b"), "0x<addr>"),
    (re.compile(r"\b[0-9a-f]{16}\b"), "<hex>"),
    (re.compile(r"\b(pid|PID)([:=]\s*| )\d+"), r"\1\2<pid>"),
    # Code offsets move with any change to the kernel's code: "panic+0x59/0x1a0".
    (re.compile(r"\+0x[0-9a-f]+/0x[0-9a-f]+\b"), "+0x<off>/0x<size>"),
]
# Comment lines of our own files (the header of a golden transcript).
COMMENT = "# "


# A side that is not a readable kernel log (rig.evidence.logread names why).
DiffInputError = LogInputError


@dataclass
class Record:
    lineno: int
    raw: str
    text: str                  # as printed, prefix removed
    key: str                   # text masked: what records are matched on
    ts_usec: Optional[int] = None
    level: Optional[int] = None
    cpu: Optional[int] = None  # the seed's CPU field, or a [C<n>] caller


@dataclass
class Log:
    name: str
    records: List[Record] = field(default_factory=list)
    dropped: List[Tuple[int, int]] = field(default_factory=list)      # (line, N)
    split: List[Tuple[int, str]] = field(default_factory=list)        # (line, fragment)
    interleaved: List[Tuple[int, str]] = field(default_factory=list)  # (line, text)


def mask(text: str) -> str:
    for pattern, repl in MASKS:
        text = pattern.sub(repl, text)
    return text.rstrip()


def read(path, stdin=None) -> Tuple[str, bytes]:
    """A log's name and its whole bytes (decompressed), for a caller that
    holds a small log in memory; rig diff and rig parse stream theirs."""
    with LogSource(path, stdin) as src:
        return src.name, b"".join(src.chunks())


# Linux 4.x printed the dropped marker and the next record on one line.
OLD_DROPPED_RE = re.compile(r"^(\*\* \d+ printk messages dropped \*\*) ?(?=\S)")
# A /dev/kmsg dump: "prio,seq,usec,flags[,...];text".
KMSG_LINE_RE = re.compile(r"^\d+,\d+,\d+,[^;]*;")


def pieces(raw: str) -> List[str]:
    """The lines a console line holds: the old one-line dropped marker and its
    record; a kernel record printed after other text on the same line
    ("Populating /dev using udev: [    3.389917] usb 1-1: ...") and that text."""
    m = OLD_DROPPED_RE.match(raw)
    if m:
        return [m.group(1)] + pieces(raw[m.end():])
    if logparse.DECODE_RE.match(raw) or logparse.CONSOLE_RE.match(raw):
        return [raw]
    m = logparse.TS_RE.search(raw)
    if m and raw[:1] not in ("<", "["):
        return [p for p in (raw[:m.start()].rstrip(), raw[m.start():]) if p]
    return [raw]


def is_kmsg_dump(lines: List[str]) -> bool:
    """Every record line is a /dev/kmsg record; the last may be cut short."""
    records = [ln for ln in lines if ln and not ln.startswith(" ")]
    return bool(records) and all(KMSG_LINE_RE.match(ln) for ln in records[:-1]) and \
        (KMSG_LINE_RE.match(records[-1]) is not None or len(records) > 1)


# A log is a /dev/kmsg dump if its first this many lines say so (all of a
# shorter log's).
KMSG_SNIFF = 1000


def kmsg_events(lines: Iterable[Tuple[int, str]], masked: bool) -> Iterator[Tuple[str, object]]:
    for lineno, line in lines:
        if not line or line.startswith(" ") or not KMSG_LINE_RE.match(line):
            continue        # continuation KEY=VALUE lines, a record cut short
        header, _, text = line.partition(";")
        prio, _, ts, _, extra = logparse.parse_kmsg_header(header)
        caller = next((f[len("caller="):] for f in extra if f.startswith("caller=")), "")
        cpu = int(caller[1:]) if caller[:1] == "C" and caller[1:].isdigit() else None
        # A record holding newlines is printed as that many console lines.
        for part in logparse.unescape(text).split("\n"):
            part = logparse.escape_controls(part)
            yield "record", Record(lineno, line, part, mask(part) if masked else part,
                                   ts, prio & 7, cpu)


def console_entries(lines: Iterable[Tuple[int, str]]
                    ) -> Iterator[Tuple[logparse.ConsoleLine, Optional[int]]]:
    """(console line, level from a dmesg --decode prefix) of every piece of
    every line; lines that are no kernel record are records too."""
    for lineno, whole in lines:
        if whole.startswith(COMMENT):
            continue
        for raw in pieces(whole):
            level = None
            m = logparse.DECODE_RE.match(raw)
            if m and m.group("lvl") in LEVELS:
                level, raw = LEVELS[m.group("lvl")], raw[m.end():]
            line = logparse.parse_console_line(lineno, raw)
            if line is None:
                if raw.strip():
                    yield logparse.ConsoleLine(lineno, raw, text=raw), level
                continue
            if line.prio is not None:
                level = line.prio & 7
            yield line, level


def fragments_of(window) -> set:
    return logparse.interrupted_fragments([(ln, True) for ln, _ in window],
                                          logparse.Transcript())


def events(lines: Iterable[str], masked: bool = True, block: int = logparse.BLOCK
           ) -> Iterator[Tuple[str, object]]:
    """A kernel log's records and what else rig diff compares, in log order,
    in the memory of a block of lines: ("record", Record), ("dropped",
    (line, N)), ("split", (line, raw)), ("interleaved", (line, text))."""
    numbered = ((n, logparse.escape_controls(ln)) for n, ln in enumerate(lines, 1))
    head = list(itertools.islice(numbered, KMSG_SNIFF))
    numbered = itertools.chain(head, numbered)
    if is_kmsg_dump([ln for _, ln in head]):
        yield from kmsg_events(numbered, masked)
        return
    entries = console_entries(numbered)
    for window, fragments, n in windowed(entries, fragments_of, block,
                                         logparse.FRAGMENT_AHEAD):
        for line, level in window[:n]:
            if line.replay:
                continue
            if line.dropped is not None:
                yield "dropped", (line.lineno, line.dropped)
                continue
            if line.lineno in fragments or cut_in_prefix(line):
                yield "split", (line.lineno, line.raw)
                continue
            if logparse.TS_RE.search(line.text):
                yield "interleaved", (line.lineno, line.text)
            cpu = line.cpu
            if cpu is None and line.caller and line.caller.startswith("C"):
                cpu = int(line.caller[1:])
            yield "record", Record(line.lineno, line.raw, line.text,
                                   mask(line.text) if masked else line.text,
                                   line.ts_usec, level, cpu)


def collect(name: str, found: Iterable[Tuple[str, object]]) -> Log:
    log = Log(name)
    for kind, what in found:
        if kind == "record":
            log.records.append(what)
        else:
            getattr(log, kind).append(what)
    return log


def parse(name: str, data: bytes, masked: bool = True) -> Log:
    """Any kernel log: console or dmesg lines with or without timestamps, a
    /dev/kmsg dump; lines that are no kernel record are records too. An empty
    log has no records: against another log that is a difference."""
    lines = logparse.split_lines(data)
    return collect(name, events(lines, masked, block=len(lines) + 1))


def cut_in_prefix(line: logparse.ConsoleLine) -> bool:
    """A line that ends inside its prefix ("[    2.09") holds no text: it was cut
    short (a takeover whose chain never ended whole, the end of a capture)."""
    return (line.ts_usec is None and line.raw[:1] in ("<", "[")
            and PARTIAL_PREFIX_RE.fullmatch(line.raw) is not None)


@dataclass
class Difference:
    kind: str       # missing extra moved changed cpu-order level cpu timestamp dropped
    #                 split interleaved, or note (not a difference: a field one side lacks)
    detail: str
    a_line: Optional[int] = None
    b_line: Optional[int] = None


def render(rec: Record, fields=("level", "cpu")) -> str:
    """A record as the unified diff shows it: level, CPU, masked text (no time)."""
    lvl = f"<{rec.level}>" if rec.level is not None and "level" in fields else ""
    cpu = f"{rec.cpu:03d}: " if rec.cpu is not None and "cpu" in fields else ""
    return f"{lvl}{cpu}{rec.key}"


def carried(log: Log, attr: str) -> int:
    """How many records carry a level or a CPU."""
    return sum(getattr(r, attr) is not None for r in log.records)


def shared_fields(a: Log, b: Log) -> Tuple[str, ...]:
    """The fields both logs carry: a field on one side only (dmesg --raw's level
    against a console, the seed's CPU field against vanilla) would make every
    line of the unified diff differ."""
    return tuple(f for f in ("level", "cpu") if carried(a, f) and carried(b, f))


def one_sided_fields(a: Log, b: Log) -> List[Difference]:
    """Said once, as a note, not a difference: no record can be compared on a
    field the other log lacks (a console against `dmesg -r`, vanilla against
    the seed's CPU field)."""
    out = []
    for attr, what in (("level", "level"), ("cpu", "CPU field")):
        na, nb = carried(a, attr), carried(b, attr)
        if bool(na) != bool(nb):
            side, log, n = ("A", a, na) if na else ("B", b, nb)
            out.append(Difference("note", f"{what} only in {side} ({n} of {len(log.records)} "
                                  f"records), not compared"))
    return out


def compare(a: Log, b: Log, ts_tolerance_s: Optional[float] = None) -> List[Difference]:
    out: List[Difference] = []
    ka, kb = [r.key for r in a.records], [r.key for r in b.records]
    pairs, missing, extra, changed = [], [], [], []
    for tag, i1, i2, j1, j2 in logalign.align(ka, kb):
        if tag == "equal":
            pairs += zip(a.records[i1:i2], b.records[j1:j2])
            continue
        olds, news = a.records[i1:i2], b.records[j1:j2]
        if tag == "replace":
            olds, news, found = pair_similar(olds, news)
            changed += found
        missing += olds
        extra += news
    missing, extra = name_the_right_line(pairs, missing, extra)
    # A record on both lists moved: pair them up in order, per text.
    waiting = defaultdict(list)
    for r in extra:
        waiting[r.key].append(r)
    moved, still_missing = [], []
    for r in missing:
        if waiting[r.key]:
            moved.append((r, waiting[r.key].pop(0)))
        else:
            still_missing.append(r)
    moved_b = {id(rb) for _, rb in moved}
    for r in still_missing:
        out.append(Difference("missing", f"in A, not in B: {r.raw}", a_line=r.lineno))
    for r in extra:
        if id(r) not in moved_b:
            out.append(Difference("extra", f"in B, not in A: {r.raw}", b_line=r.lineno))
    for ra, rb in moved:
        out.append(Difference("moved", f"record moved: {ra.text}", ra.lineno, rb.lineno))
    for ra, rb in changed:
        out.append(Difference("changed", f"{ra.text!r} -> {rb.text!r}", ra.lineno, rb.lineno))
    out += cpu_order_changes(a, b)
    out += one_sided_fields(a, b)
    for ra, rb in pairs + moved:
        if ra.level is not None and rb.level is not None and ra.level != rb.level:
            out.append(Difference("level", f"level {ra.level} -> {rb.level}: {ra.text}",
                                  ra.lineno, rb.lineno))
        if ra.cpu is not None and rb.cpu is not None and ra.cpu != rb.cpu:
            out.append(Difference("cpu", f"CPU {ra.cpu} -> {rb.cpu}: {ra.text}",
                                  ra.lineno, rb.lineno))
        if (ts_tolerance_s is not None and ra.ts_usec is not None and rb.ts_usec is not None
                and abs(ra.ts_usec - rb.ts_usec) > ts_tolerance_s * 1e6):
            out.append(Difference("timestamp", f"{(rb.ts_usec - ra.ts_usec) / 1e3:+.3f} ms "
                                  f"(tolerance {ts_tolerance_s * 1e3:g} ms): {ra.text}",
                                  ra.lineno, rb.lineno))
    if [n for _, n in a.dropped] != [n for _, n in b.dropped]:
        out.append(Difference("dropped", f"dropped counts A {fmt_dropped(a)}, "
                              f"B {fmt_dropped(b)}"))
    for kind, side_a, side_b in (("split", a.split, b.split),
                                 ("interleaved", a.interleaved, b.interleaved)):
        only_a, only_b = only_in(side_a, side_b), only_in(side_b, side_a)
        for line, text in only_a:
            out.append(Difference(kind, f"only in A: {text}", a_line=line))
        for line, text in only_b:
            out.append(Difference(kind, f"only in B: {text}", b_line=line))
    return out


# A changed record is looked for among the new records this near its place
# in the replaced block, and among those nearest it that begin with the same
# two words: not among all of them, so that a block of thousands of changed
# records costs as much per record as a short one.
SIMILAR_WINDOW = 8


def head(key: str) -> str:
    return " ".join(key.split(None, 2)[:2])


def candidates(i: int, rank: int, n_same_old: int, n_old: int, news: List[Record],
               same: List[int]) -> List[int]:
    """The new records near old record i's place, and those with its first two
    words near its rank among the old records that have them: a block of
    such records keeps its order when other records were added before it."""
    near = i * len(news) // max(n_old, 1)
    found = set(range(max(0, near - SIMILAR_WINDOW), min(len(news), near + SIMILAR_WINDOW + 1)))
    k = rank * len(same) // max(n_same_old, 1)
    found.update(same[max(0, k - SIMILAR_WINDOW):k + SIMILAR_WINDOW + 1])
    at = same[k] if k < len(same) else near
    return sorted(found, key=lambda j: (min(abs(j - near), abs(j - at)), j))


# How far along the matched records a masked twin of a missing or extra
# record is looked for.
TWIN_REACH = 32


def name_the_right_line(pairs: List[Tuple[Record, Record]], missing: List[Record],
                        extra: List[Record]) -> Tuple[List[Record], List[Record]]:
    """Masking can make neighbouring records equal ("foo+0x<off>/0x<size>",
    raw stack words), and the alignment then pairs the twins in order and
    calls the last one missing or extra, whichever of them it was. Where the
    other side holds a missing record's exact text in a pair whose A record
    differs from it, the pair is the missing record's: the other twin is the
    one that is missing. The same for extra records."""
    missing, extra = list(missing), list(extra)
    for lost, side in ((missing, 0), (extra, 1)):
        lines = [p[side].lineno for p in pairs]      # in order on either side
        for k in range(len(lost)):
            # A run of twins shifts one place per swap: swap until none fits.
            for _ in range(2 * TWIN_REACH):
                rec = lost[k]
                start = bisect.bisect_left(lines, rec.lineno)
                near = range(max(0, start - TWIN_REACH), min(len(pairs), start + TWIN_REACH))
                for n in sorted(near, key=lambda n: abs(n - start)):
                    mine, theirs = pairs[n][side], pairs[n][1 - side]
                    if (mine.key == rec.key and mine.text != theirs.text
                            and rec.text == theirs.text):
                        pairs[n] = (rec, theirs) if side == 0 else (theirs, rec)
                        lines[n] = rec.lineno
                        lost[k] = mine
                        break
                else:
                    break
    return missing, extra


def pair_similar(olds: List[Record], news: List[Record], cutoff: float = 0.6):
    """Within a replaced block, pair each old record with the most similar new one
    (a changed message); returns the unpaired old and new ones and the pairs.
    The records left unpaired are tried again among themselves, in their own
    places, until no pair is found."""
    pairs = []
    while olds and news:
        found = pair_nearby(olds, news, cutoff)
        if not found:
            break
        pairs += found
        paired_a, paired_b = {id(ra) for ra, _ in found}, {id(rb) for _, rb in found}
        olds = [r for r in olds if id(r) not in paired_a]
        news = [r for r in news if id(r) not in paired_b]
    pairs.sort(key=lambda p: p[0].lineno)
    return olds, news, pairs


def pair_nearby(olds: List[Record], news: List[Record], cutoff: float):
    """One pass: each old record with the most similar unused new candidate."""
    pairs, used = [], set()
    by_head, old_heads = defaultdict(list), Counter(head(r.key) for r in olds)
    for j, rb in enumerate(news):
        by_head[head(rb.key)].append(j)
    ranks: Counter = Counter()
    matchers: Dict[int, difflib.SequenceMatcher] = {}    # one per new record, reused
    for i, ra in enumerate(olds):
        h = head(ra.key)
        best, best_ratio = None, cutoff
        for j in candidates(i, ranks[h], old_heads[h], len(olds), news, by_head.get(h, [])):
            if j in used:
                continue
            # Nearest first: of equally similar records, the one in its place.
            sm = matchers.get(j)
            if sm is None:
                sm = matchers[j] = difflib.SequenceMatcher(None, "", news[j].key)
            sm.set_seq1(ra.key)
            if sm.real_quick_ratio() < best_ratio or sm.quick_ratio() < best_ratio:
                continue
            ratio = sm.ratio()
            if ratio > best_ratio or (best is None and ratio == best_ratio):
                best, best_ratio = j, ratio
        ranks[h] += 1
        if best is not None:
            used.add(best)
            pairs.append((ra, news[best]))
    return pairs


def fmt_dropped(log: Log) -> str:
    return "[" + ", ".join(f"{n} at line {line}" for line, n in log.dropped) + "]"


def line_key(raw: str) -> str:
    """What a split or interleaved line is compared on: masked, prefix (even a
    partial one) removed, so that timestamps do not count."""
    return mask(PARTIAL_PREFIX_RE.sub("", raw, count=1))


def only_in(these: List[Tuple[int, str]], others: List[Tuple[int, str]]):
    left = Counter(line_key(t) for _, t in others)
    out = []
    for line, text in these:
        if left[line_key(text)]:
            left[line_key(text)] -= 1
        else:
            out.append((line, text))
    return out


def cpu_order_changes(a: Log, b: Log) -> List[Difference]:
    """Per CPU, the order of the records both logs have: SMP may interleave CPUs
    differently from run to run, but one CPU's records must keep their order."""
    common = Counter(r.key for r in a.records) & Counter(r.key for r in b.records)
    out = []
    for cpu in sorted({r.cpu for r in a.records + b.records if r.cpu is not None}):
        seq_a = [r for r in a.records if r.cpu == cpu and common[r.key]]
        seq_b = [r for r in b.records if r.cpu == cpu and common[r.key]]
        keys_a, keys_b = [r.key for r in seq_a], [r.key for r in seq_b]
        if sorted(keys_a) != sorted(keys_b) or keys_a == keys_b:
            continue     # a CPU change or nothing: reported elsewhere
        i = next(i for i, (x, y) in enumerate(zip(keys_a, keys_b)) if x != y)
        out.append(Difference("cpu-order", f"CPU {cpu}: A has {seq_a[i].text!r} where B has "
                              f"{seq_b[i].text!r}", seq_a[i].lineno, seq_b[i].lineno))
    return out


def unified(a: Log, b: Log, context: int = 3) -> List[str]:
    fields = shared_fields(a, b)
    la, lb = [render(r, fields) for r in a.records], [render(r, fields) for r in b.records]
    return logalign.unified(la, lb, logalign.align(la, lb), a.name, b.name, context)


@dataclass
class Result:
    a: Log
    b: Log
    differences: List[Difference]
    diff_lines: List[str]

    @property
    def equal(self) -> bool:
        return not self.diff_lines and all(d.kind == "note" for d in self.differences)

    def to_json(self) -> Dict:
        return {"a": {"path": self.a.name, "records": len(self.a.records)},
                "b": {"path": self.b.name, "records": len(self.b.records)},
                "equal": self.equal,
                "counts": dict(Counter(d.kind for d in self.differences if d.kind != "note")),
                "differences": [asdict(d) for d in self.differences],
                "unified_diff": self.diff_lines}


def diff_files(path_a: Path, path_b: Path, ts_tolerance_s: Optional[float] = None,
               masked: bool = True) -> Result:
    a, b = (parse(*read(p), masked=masked) for p in (path_a, path_b))
    return Result(a, b, compare(a, b, ts_tolerance_s), unified(a, b))


COLOURS = {"missing": "31", "extra": "32", "moved": "33", "changed": "33", "cpu-order": "35",
           "-": "31",
           "+": "32", "@": "36"}


def paint(code: str, s: str, colour: bool) -> str:
    return f"\033[{code}m{s}\033[0m" if colour and code else s


def paint_difference(d: Difference, colour: bool) -> str:
    where = " ".join(x for x in (f"A:{d.a_line}" if d.a_line else "",
                                 f"B:{d.b_line}" if d.b_line else "") if x)
    return paint(COLOURS.get(d.kind, ""), f"{d.kind:<11} {where:<14} {d.detail}", colour)


def paint_diff_line(ln: str, colour: bool) -> str:
    return paint(COLOURS.get(ln[:1], "") if not ln.startswith(("---", "+++")) else "1", ln,
                 colour)


def format_text(res: Result, colour: bool) -> str:
    lines = [f"A: {res.a.name} ({len(res.a.records)} records)",
             f"B: {res.b.name} ({len(res.b.records)} records)"]
    notes = [f"note: {d.detail}" for d in res.differences if d.kind == "note"]
    if res.equal:
        return "\n".join(lines + notes + ["equal"]) + "\n"
    counts = Counter(d.kind for d in res.differences if d.kind != "note")
    lines.append("differences: " + (", ".join(f"{n} {k}" for k, n in counts.items())
                                    or "none by record, text differs"))
    lines += [paint_difference(d, colour) for d in res.differences]
    lines += [paint_diff_line(ln, colour) for ln in res.diff_lines]
    return "\n".join(lines) + "\n"
