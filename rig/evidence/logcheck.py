"""rig parse LOG|RUN_DIR [--json]: what a saved kernel log shows on its own,
the offline counterpart of a boot (as `kunit.py parse` is for KUnit).

Properties, each judged or only described (info):
- console lines parse: every line after the kernel's first is a printk line;
- no crash: no crash headline (rig.evidence.crash), each found named by its title;
- no dropped records: no "** N printk messages dropped **" line;
- CPU field (info): how many records carry the seed's CPU field, per CPU;
- cut lines (info): lines cut short by a console takeover, and replays;
- emergency lines (info): records of loglevel 0-4 where the log has levels.
Exit 0 every judged property holds, 1 one does not, 2 bad input.

The log is read as a stream, three times over (rig.evidence.logread): a
log of any size is judged in the memory of a block of its lines.
"""
import itertools
import json
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import List, Optional

from rig.evidence import crash, logdiff, logparse
from rig.evidence.logread import MAX_DECOMPRESSED, LogInputError, LogSource

# The patched kernel's default emergency threshold: warnings and worse.
EMERGENCY_LEVEL_MAX = 4


@dataclass
class Property:
    name: str
    ok: Optional[bool]      # None: described, not judged
    detail: str


@dataclass
class Tally:
    """What one streamed pass over a log's records counts."""
    records: int = 0
    dropped_lines: int = 0
    dropped: int = 0
    first_dropped: Optional[int] = None
    split: int = 0
    interleaved: int = 0
    cpus: Counter = field(default_factory=Counter)
    levels: int = 0
    emergency: int = 0

    def add(self, kind: str, what) -> None:
        if kind == "record":
            self.records += 1
            if what.cpu is not None:
                self.cpus[what.cpu] += 1
            if what.level is not None:
                self.levels += 1
                self.emergency += what.level <= EMERGENCY_LEVEL_MAX
        elif kind == "dropped":
            self.dropped_lines += 1
            self.dropped += what[1]
            if self.first_dropped is None:
                self.first_dropped = what[0]
        elif kind in ("split", "interleaved"):
            setattr(self, kind, getattr(self, kind) + 1)


def judge(src: LogSource) -> List[Property]:
    """The properties of a log, in three streamed passes over it (its
    console lines, its records, its crash headlines): memory does not grow
    with the log."""
    head = list(itertools.islice(src.lines(), logdiff.KMSG_SNIFF))
    kmsg = logdiff.is_kmsg_dump(head)
    tally = Tally()
    for kind, what in logdiff.events(src.lines()):
        tally.add(kind, what)
    out = []
    if kmsg:
        # A /dev/kmsg dump: records, not console lines; its texts hold the crashes.
        out.append(Property("console lines parse", bool(tally.records),
                            f"a /dev/kmsg dump of {tally.records} records"))
        texts = (what.text for kind, what in logdiff.events(src.lines()) if kind == "record")
        replays = 0
    else:
        out.append(console_lines(src))
        texts = src.lines()
        replays = sum(1 for kind, line in logparse.transcript_events(src.lines())
                      if kind == "line" and line.replay)
    crashes, shown = 0, []
    for c in crash.find_in(texts):
        crashes += 1
        if len(shown) < 5:
            shown.append(f"{c.title} (line {c.lineno})")
    out.append(Property("no crash", not crashes,
                        "; ".join(shown) + (f"; {crashes - 5} more" if crashes > 5 else "")
                        if crashes else "no crash headline"))
    out.append(Property("no dropped records", not tally.dropped_lines,
                        f"{tally.dropped} records in {tally.dropped_lines} dropped lines, "
                        f"first at line {tally.first_dropped}" if tally.dropped_lines
                        else "none"))
    cpus = tally.cpus
    out.append(Property("CPU field", None,
                        f"{sum(cpus.values())} of {tally.records} records: "
                        + ", ".join(f"CPU {c}: {n}" for c, n in sorted(cpus.items()))
                        if cpus else "no record carries one"))
    out.append(Property("cut lines", None,
                        f"{tally.split} lines cut short, {replays} replay lines, "
                        f"{tally.interleaved} lines holding two records"))
    out.append(Property("emergency lines", None,
                        f"{tally.emergency} of {tally.levels} records at loglevel "
                        f"{EMERGENCY_LEVEL_MAX} or more urgent"
                        if tally.levels else "the log carries no loglevels"))
    return out


def console_lines(src: LogSource) -> Property:
    """Every line after the kernel's first is a printk line."""
    firmware = lines = unparsed = 0
    first_bad = None
    for kind, line in logparse.transcript_events(src.lines()):
        if kind == "firmware":
            firmware += 1
        elif kind == "line":
            lines += 1
        elif kind == "unparsed":
            unparsed += 1
            first_bad = first_bad or line
    if not lines and not unparsed:
        return Property("console lines parse", False,
                        "no kernel log line in it (expected lines like "
                        "'[    1.234567] text', or a /dev/kmsg dump)")
    if unparsed:
        return Property("console lines parse", False,
                        f"{unparsed} of {lines + unparsed} kernel lines do not parse; first: "
                        f"line {first_bad.lineno} {first_bad.raw[:100]!r}")
    return Property("console lines parse", True,
                    f"{lines} kernel lines"
                    + (f" after {firmware} lines before the kernel" if firmware else ""))


def render(name: str, props: List[Property]) -> str:
    lines = [f"{name}:"]
    for p in props:
        mark = "info" if p.ok is None else ("PASS" if p.ok else "FAIL")
        lines.append(f"  {mark:<4} {p.name}: {p.detail}")
    return "\n".join(lines) + "\n"


def main(path: str, as_json: bool, out=sys.stdout, stdin=None,
         max_decompressed: int = MAX_DECOMPRESSED) -> int:
    try:
        with LogSource(path, stdin, max_decompressed) as src:
            name, props = src.name, judge(src)
    except LogInputError as e:
        print(f"rig parse: {e}", file=sys.stderr)
        return 2
    failed = any(p.ok is False for p in props)
    if as_json:
        out.write(json.dumps({"log": name, "ok": not failed,
                              "properties": [asdict(p) for p in props]}, indent=1) + "\n")
    else:
        out.write(render(name, props))
    return 1 if failed else 0
