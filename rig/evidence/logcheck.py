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
"""
import json
import sys
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import List, Optional

from rig.evidence import crash, logdiff, logparse

# The patched kernel's default emergency threshold: warnings and worse.
EMERGENCY_LEVEL_MAX = 4


@dataclass
class Property:
    name: str
    ok: Optional[bool]      # None: described, not judged
    detail: str


def judge(data: bytes) -> List[Property]:
    transcript = logparse.parse_transcript(data)
    log = logdiff.parse("log", data)
    kmsg = logdiff.is_kmsg_dump(logparse.split_lines(data))
    out = []
    if kmsg:
        # A /dev/kmsg dump: records, not console lines; its texts hold the crashes.
        out.append(Property("console lines parse", bool(log.records),
                            f"a /dev/kmsg dump of {len(log.records)} records"))
        data = "\n".join(r.text for r in log.records).encode()
    elif not transcript.lines and not transcript.unparsed:
        out.append(Property("console lines parse", False,
                            "no kernel log line in it (expected lines like "
                            "'[    1.234567] text', or a /dev/kmsg dump)"))
    elif transcript.unparsed:
        bad = transcript.unparsed[0]
        out.append(Property("console lines parse", False,
                            f"{len(transcript.unparsed)} of "
                            f"{len(transcript.lines) + len(transcript.unparsed)} kernel lines do "
                            f"not parse; first: line {bad.lineno} {bad.raw[:100]!r}"))
    else:
        out.append(Property("console lines parse", True,
                            f"{len(transcript.lines)} kernel lines"
                            + (f" after {len(transcript.firmware)} lines before the kernel"
                               if transcript.firmware else "")))
    crashes = crash.find(data)
    out.append(Property("no crash", not crashes,
                        "; ".join(f"{c.title} (line {c.lineno})" for c in crashes[:5])
                        + (f"; {len(crashes) - 5} more" if len(crashes) > 5 else "")
                        if crashes else "no crash headline"))
    dropped = sum(n for _, n in log.dropped)
    out.append(Property("no dropped records", not log.dropped,
                        f"{dropped} records in {len(log.dropped)} dropped lines, first at line "
                        f"{log.dropped[0][0]}" if log.dropped else "none"))
    cpus = Counter(r.cpu for r in log.records if r.cpu is not None)
    out.append(Property("CPU field", None,
                        f"{sum(cpus.values())} of {len(log.records)} records: "
                        + ", ".join(f"CPU {c}: {n}" for c, n in sorted(cpus.items()))
                        if cpus else "no record carries one"))
    replays = sum(ln.replay for ln in transcript.lines)
    out.append(Property("cut lines", None,
                        f"{len(log.split)} lines cut short, {replays} replay lines, "
                        f"{len(log.interleaved)} lines holding two records"))
    levels = [r.level for r in log.records if r.level is not None]
    out.append(Property("emergency lines", None,
                        f"{sum(lv <= EMERGENCY_LEVEL_MAX for lv in levels)} of {len(levels)} "
                        f"records at loglevel {EMERGENCY_LEVEL_MAX} or more urgent"
                        if levels else "the log carries no loglevels"))
    return out


def render(name: str, props: List[Property]) -> str:
    lines = [f"{name}:"]
    for p in props:
        mark = "info" if p.ok is None else ("PASS" if p.ok else "FAIL")
        lines.append(f"  {mark:<4} {p.name}: {p.detail}")
    return "\n".join(lines) + "\n"


def main(path: str, as_json: bool, out=sys.stdout, stdin=None) -> int:
    try:
        name, data = logdiff.read(Path(path) if path != "-" else path, stdin=stdin)
    except logdiff.DiffInputError as e:
        print(f"rig parse: {e}", file=sys.stderr)
        return 2
    props = judge(data)
    failed = any(p.ok is False for p in props)
    if as_json:
        out.write(json.dumps({"log": name, "ok": not failed,
                              "properties": [asdict(p) for p in props]}, indent=1) + "\n")
    else:
        out.write(render(name, props))
    return 1 if failed else 0
