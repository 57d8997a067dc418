"""Properties of a boot, checked from its evidence (rig.evidence, parsed
once); shared by S1, `rig boot` and the report.

Each check returns a Check naming the property, so that a failure message says
which promise was broken and where.
"""
import re
from dataclasses import dataclass
from typing import List

from rig import crash, logparse
from rig.evidence import Evidence

# A stack trace without a headline rig.crash knows is still a splat.
TRACE_RE = re.compile(r"\bCall [Tt]race:|------------\[ cut here \]------------")


@dataclass
class Check:
    prop: str
    ok: bool
    detail: str

    def __str__(self) -> str:
        return f"{'PASS' if self.ok else 'FAIL'} {self.prop}: {self.detail}"


def booted_to_init(ev: Evidence) -> Check:
    ok = b"rig-init: start" in ev.result.console
    return Check("boots to init", ok, "rig-init started" if ok else
                 "no 'rig-init: start' line on the console")


def console_lines_parse(ev: Evidence) -> Check:
    t = ev.transcript
    if not t.lines:
        return Check("console lines parse", False, "no kernel line on the console at all")
    if t.unparsed:
        bad = "; ".join(f"line {ln.lineno}: {ln.raw[:100]!r}" for ln in t.unparsed[:5])
        return Check("console lines parse", False,
                     f"{len(t.unparsed)} of {len(t.lines) + len(t.unparsed)} kernel lines "
                     f"do not parse: {bad}")
    return Check("console lines parse", True, f"{len(t.lines)} kernel lines parsed "
                 f"({len(t.firmware)} firmware lines before the kernel)")


def no_splat(ev: Evidence) -> Check:
    console = ev.result.console
    found = crash.first(console)
    if found:
        return Check("no WARN/BUG/lockdep splat", False,
                     f"{found.title} (console line {found.lineno}: {found.headline[:120]!r})")
    for lineno, line in enumerate(logparse.split_lines(console), 1):
        if TRACE_RE.search(line):
            return Check("no WARN/BUG/lockdep splat", False,
                         f"backtrace at console line {lineno}: {line[:120]!r}")
    return Check("no WARN/BUG/lockdep splat", True, "none found")


KMSG_CONTIGUOUS = "/dev/kmsg seq contiguous from 0"


def kmsg_contiguous(ev: Evidence) -> Check:
    prop = KMSG_CONTIGUOUS
    if ev.unreadable:
        return Check(prop, False, "; ".join(ev.unreadable.values()))
    for name in ("kmsg", "kmsg-meta"):
        if name not in ev.side.sections:
            return Check(prop, False, f"side channel has no section {name!r} (sections: "
                         f"{', '.join(sorted(ev.side.sections)) or 'none'}; status: "
                         f"{ev.side.status})")
    records, meta = ev.kmsg, ev.side.section("kmsg-meta").decode()
    if not records:
        return Check(prop, False, "the /dev/kmsg dump holds no record")
    seqs = [r.seq for r in records]
    if seqs[0] != 0:
        return Check(prop, False, f"first record has seq {seqs[0]}, not 0 ({meta.strip()})")
    for prev, cur in zip(seqs, seqs[1:]):
        if cur != prev + 1:
            return Check(prop, False, f"seq jumps from {prev} to {cur} ({meta.strip()})")
    return Check(prop, True, f"{len(records)} records, seq 0..{seqs[-1]} ({meta.strip()})")


def exit_clean(ev: Evidence) -> Check:
    oc = ev.result.outcome
    return Check("exit class is clean", oc.cls == "clean",
                 f"{oc.cls}: {oc.detail.splitlines()[0]}")


def boot_checks(ev: Evidence) -> List[Check]:
    """Catalogue S1: the properties every boot must have."""
    return [booted_to_init(ev), console_lines_parse(ev), no_splat(ev),
            kmsg_contiguous(ev), exit_clean(ev)]
