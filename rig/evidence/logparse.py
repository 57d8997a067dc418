"""Parsers for the two text sources of evidence: console lines and /dev/kmsg records."""
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

from rig.evidence.window import windowed

# [    1.234567] text    with optional <N> syslog prefix, [ T1] caller field,
# and the seed's "001: " CPU field after the timestamp.
CONSOLE_RE = re.compile(
    r"^(?:<(?P<prio>\d{1,3})>)?"
    r"\[\s*(?P<sec>\d+)\.(?P<usec>\d{6})\]"
    r"(?:\[\s*(?P<caller>[TC]\d+)\])?"
    r" ?(?:(?P<cpu>\d{3}): )?"
    r"(?P<text>.*)$")
DROPPED_RE = re.compile(r"^\*\* (\d+) printk messages dropped \*\*$")
# util-linux `dmesg --decode`: "kern  :info  : [    1.234567] text"
DECODE_RE = re.compile(r"^(?P<fac>[a-z0-9]+)\s*:(?P<lvl>[a-z]+)\s*: ")
# A printk timestamp anywhere in a line (a record after other text on it).
TS_RE = re.compile(r"\[\s*\d+\.\d{6}\]")
# Control bytes other than tab, shown as \xNN by the rig's text outputs.
CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def escape_controls(text: str) -> str:
    return CONTROL_RE.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
# nbcon: a context that took a console over prints the interrupted record again.
REPLAY_LINE = "** replaying previous printk message **"
# How far back from a replay line the interrupted fragment may be: the lines in
# between are the emergency lines that interrupted it.
REPLAY_LOOKBACK = 64


@dataclass
class ConsoleLine:
    lineno: int
    raw: str
    ts_usec: Optional[int] = None
    cpu: Optional[int] = None
    caller: Optional[str] = None
    prio: Optional[int] = None
    text: str = ""
    dropped: Optional[int] = None   # N of a "** N printk messages dropped **" line
    replay: bool = False            # the nbcon "** replaying previous printk message **" line


@dataclass
class Transcript:
    firmware: List[str] = field(default_factory=list)   # lines before the kernel's first
    lines: List[ConsoleLine] = field(default_factory=list)
    unparsed: List[ConsoleLine] = field(default_factory=list)
    # Lines cut short by a takeover and printed again whole after a replay line:
    # (fragment, the complete line that followed the replay line), or, for a cut
    # replay line, (fragment, the whole replay line).
    interrupted: List[Tuple[ConsoleLine, ConsoleLine]] = field(default_factory=list)


def split_lines(data: bytes) -> List[str]:
    """Console bytes to lines: CRLF or LF ends a line, stray CRs are dropped."""
    text = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def parse_console_line(lineno: int, raw: str) -> Optional[ConsoleLine]:
    if raw == REPLAY_LINE:
        return ConsoleLine(lineno, raw, replay=True, text=raw)
    m = DROPPED_RE.match(raw)
    if m:
        return ConsoleLine(lineno, raw, dropped=int(m.group(1)), text=raw)
    m = CONSOLE_RE.match(raw)
    if not m:
        return None
    return ConsoleLine(
        lineno, raw,
        ts_usec=int(m.group("sec")) * 1_000_000 + int(m.group("usec")),
        cpu=int(m.group("cpu")) if m.group("cpu") else None,
        caller=m.group("caller"),
        prio=int(m.group("prio")) if m.group("prio") else None,
        text=m.group("text"))


def parse_transcript(data: bytes) -> Transcript:
    """Everything from the first timestamped line on is kernel output."""
    lines = split_lines(data)
    out = Transcript()
    for kind, line in transcript_events(lines, block=len(lines) + 1, out=out):
        if kind == "firmware":
            out.firmware.append(line)
        elif kind == "line":
            out.lines.append(line)
        elif kind == "unparsed":
            out.unparsed.append(line)
    return out


# Lines a fragment's judgement looks ahead (interrupted_fragments): the
# attempts after it, and the attempts after those that may cut them again.
FRAGMENT_AHEAD = 2 * (REPLAY_LOOKBACK + 1) + 2
BLOCK = 4096


FIRMWARE = None     # the parsed flag of a line before the kernel's first (console_entries)


def console_entries(lines: Iterable[str]
                    ) -> Iterator[Tuple[ConsoleLine, Optional[bool]]]:
    """(line, parsed) of every line: parsed None for a line before the
    kernel's first (timestamped) one, True or False for the kernel's."""
    in_kernel = False
    for lineno, raw in enumerate(lines, 1):
        line = parse_console_line(lineno, raw)
        if not in_kernel:
            if line is None or line.ts_usec is None:
                yield ConsoleLine(lineno, raw, text=raw), FIRMWARE
                continue
            in_kernel = True
        if line is None:
            if raw.strip():
                yield ConsoleLine(lineno, raw, text=raw), False
            continue
        yield line, True


def transcript_events(lines: Iterable[str], block: int = BLOCK,
                      out: Optional[Transcript] = None) -> Iterator[Tuple[str, object]]:
    """A transcript as events, in console order, in the memory of a block of
    lines: ("firmware", raw), ("line", ConsoleLine), ("unparsed",
    ConsoleLine) or ("fragment", ConsoleLine) for a line cut short by a
    takeover. The fragments' pairs with their whole lines go to
    out.interrupted."""
    pairs = out.interrupted if out is not None else []
    for window, (found, paired), n in windowed(console_entries(lines), with_fragments, block,
                                               FRAGMENT_AHEAD):
        block_end = window[n - 1][0].lineno
        pairs += [pair for pair in paired if pair[0].lineno <= block_end]
        for line, parsed in window[:n]:
            if parsed is FIRMWARE:
                yield "firmware", line.raw
            else:
                yield ("fragment" if line.lineno in found else
                       "line" if parsed else "unparsed"), line


def with_fragments(window) -> Tuple[set, list]:
    """interrupted_fragments of a window's kernel lines: (fragment line
    numbers, pairs)."""
    found = Transcript()
    kernel = [e for e in window if e[1] is not FIRMWARE]
    return interrupted_fragments(kernel, found), found.interrupted


def interrupted_fragments(entries, out: Transcript) -> set:
    """Find the lines cut short by a takeover. The interrupted record is printed
    again after a replay line, and that attempt may be cut again, each time at
    another byte, until one attempt is whole. So a fragment is a line that is a
    prefix of (or equal to: its own newline was cut) an attempt that follows a
    replay line within REPLAY_LOOKBACK lines after it. Each fragment is paired
    with the first such attempt that is not a fragment itself, the whole line.
    Cut replay and dropped lines are fragments too (marker_fragments).
    The printer prints a dropped line between the replay line and the record
    ("** replaying ...", "** 25 printk messages dropped **", the record): the
    attempt is the record, and a whole dropped line is never a fragment (a
    flood prints the same count again and again).
    Returns the line numbers of the fragments; the pairs go to out.interrupted."""
    attempts = [a for a in (attempt_after(entries, i) for i, (line, _) in enumerate(entries)
                            if line.replay) if a is not None]
    fragment_of = {}        # index of a fragment -> indices of the attempts it is a prefix of
    for a in attempts:
        whole = entries[a][0].raw
        for j in range(a - 1, max(-1, a - 1 - REPLAY_LOOKBACK), -1):
            cand = entries[j][0]
            if not cand.replay and cand.dropped is None and whole.startswith(cand.raw):
                fragment_of.setdefault(j, []).append(a)
    found = set()
    for j in sorted(fragment_of):
        whole = next((a for a in fragment_of[j] if a not in fragment_of), None)
        if whole is None:
            continue        # only other fragments follow: the chain never ended whole
        found.add(entries[j][0].lineno)
        out.interrupted.append((entries[j][0], entries[whole][0]))
    return found | marker_fragments(entries, out)


def attempt_after(entries, i: int) -> Optional[int]:
    """Index of the record the printer prints again after the replay line at
    i: the next line, or the one after the dropped line that precedes it;
    None when another replay line (the attempt was cut at once) or the
    window's end comes first."""
    a = i + 1
    if a < len(entries) and entries[a][0].dropped is not None:
        a += 1
    if a >= len(entries) or entries[a][0].replay:
        return None
    return a


def marker_fragments(entries, out: Transcript) -> set:
    """A replay or dropped line is cut by a takeover like any line ("** replaying
    previo", "** 53 printk messages dr": seen on real patched panics, oopses and
    floods). Such a fragment is no record; a cut replay line is paired with the
    next whole one, which the printer prints before the record it announces."""
    found = set()
    for j, (line, _) in enumerate(entries):
        if not cut_marker(line.raw):
            continue
        found.add(line.lineno)
        ahead = entries[j + 1:j + 1 + REPLAY_LOOKBACK]
        whole = next((ln for ln, _ in ahead if ln.replay), None)
        if whole is not None and REPLAY_LINE.startswith(line.raw):
            out.interrupted.append((line, whole))
    return found


# What is left of "** N printk messages dropped **" when a takeover cuts it:
# "*", "**", "** 5", or "** 53 " and a proper prefix of DROPPED_TAIL.
CUT_DROPPED_RE = re.compile(r"^\*(?:\*(?: \d*)?)?$|^\*\* \d+ (?P<tail>.*)$")
DROPPED_TAIL = "printk messages dropped **"


def cut_marker(raw: str) -> bool:
    """A proper prefix of the replay line or of a dropped line."""
    if raw and raw != REPLAY_LINE and REPLAY_LINE.startswith(raw):
        return True
    m = CUT_DROPPED_RE.match(raw)
    if not m:
        return False
    tail = m.group("tail")
    return tail is None or (tail != DROPPED_TAIL and DROPPED_TAIL.startswith(tail))


@dataclass
class KmsgRecord:
    prio: int
    seq: int
    ts_usec: int
    flags: str
    extra: List[str]            # fields after flags that this parser does not know
    text: str                   # \xNN escapes decoded
    props: Dict[str, str] = field(default_factory=dict)   # continuation KEY=VALUE lines

    @property
    def level(self) -> int:
        return self.prio & 7

    @property
    def facility(self) -> int:
        return self.prio >> 3


class KmsgFormatError(ValueError):
    pass


ESCAPE_RE = re.compile(r"\\x([0-9a-fA-F]{2})")


def unescape(text: str) -> str:
    return ESCAPE_RE.sub(lambda m: chr(int(m.group(1), 16)), text)


def parse_kmsg_header(header: str) -> Tuple[int, int, int, str, List[str]]:
    fields = header.split(",")
    if len(fields) < 4:
        raise KmsgFormatError(f"header {header!r} has fewer than 4 fields")
    try:
        prio, seq, ts = int(fields[0]), int(fields[1]), int(fields[2])
    except ValueError as e:
        raise KmsgFormatError(f"header {header!r}: {e}") from e
    return prio, seq, ts, fields[3], fields[4:]


def parse_kmsg(data: bytes) -> List[KmsgRecord]:
    """Records as read from /dev/kmsg (one per read, concatenated)."""
    records: List[KmsgRecord] = []
    for n, line in enumerate(data.decode("utf-8", "replace").split("\n"), 1):
        if not line:
            continue
        if line.startswith(" "):
            if not records:
                raise KmsgFormatError(f"line {n}: continuation line before any record")
            key, _, value = line[1:].partition("=")
            records[-1].props[key] = unescape(value)
            continue
        header, sep, text = line.partition(";")
        if not sep:
            raise KmsgFormatError(f"line {n}: no ';' after the header: {line[:80]!r}")
        try:
            prio, seq, ts, flags, extra = parse_kmsg_header(header)
        except KmsgFormatError as e:
            raise KmsgFormatError(f"line {n}: {e}") from e
        records.append(KmsgRecord(prio, seq, ts, flags, extra, unescape(text)))
    return records
