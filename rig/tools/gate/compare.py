"""Compare the suite's verdicts on base and head, test by test.

A test's verdict is reduced to whether its property held: passed is PASS,
a failure is FAIL, an error (the test itself broke, or the boot did) ERROR,
skipped SKIP, and a strict xfail XFAIL (the property does not hold, as
expected for that kernel). The change then regressed a test that held on
base and not on head, or one that only head has and that fails there; fixed
one that went the other way, and left the rest. A test that failed on
either side on the rig's own fault (rig.faults) judged nothing there: it is
skipped, never a regression, and the gate says it could not judge it.
"""
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Set

from rig.tools.junit import failure_messages, rig_faults, verdicts, wall_times

STATUS = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "skipped": "SKIP",
          "xfailed": "XFAIL"}

# Kinds of change, in the order a report lists them.
REGRESSED, FIXED, FAILS_ON_BOTH, PASSES, SKIPPED, ONLY_BASE, ONLY_HEAD = (
    "regressed", "fixed", "fails on both", "passes", "skipped", "only on base",
    "only on head")
KINDS = (REGRESSED, FIXED, FAILS_ON_BOTH, PASSES, SKIPPED, ONLY_BASE, ONLY_HEAD)


@dataclass
class SuiteResult:
    """One revision's run of the suite, read from its JUnit XML."""
    status: Dict[str, str]        # test id -> PASS FAIL ERROR SKIP
    message: Dict[str, str]       # test id -> first line of its failure
    seconds: Dict[str, float]
    faults: Set[str] = field(default_factory=set)   # failed on the rig's own fault

    @classmethod
    def read(cls, junit: Path) -> "SuiteResult":
        return cls({t: STATUS[v] for t, v in verdicts(junit).items()},
                   failure_messages(junit), wall_times(junit), rig_faults(junit))


@dataclass
class Change:
    test_id: str
    kind: str
    base: Optional[str]           # status on base, None if not run there
    head: Optional[str]
    message: str                  # what head's failure says (base's when fixed)


def held(status: Optional[str]) -> Optional[bool]:
    """Did the property hold? None when the test did not judge it."""
    return {"PASS": True, "FAIL": False, "ERROR": False, "XFAIL": False}.get(status)


def kind_of(base: Optional[str], head: Optional[str]) -> str:
    if base is None:
        # A new test that fails on head is the change's failure; an expected
        # one (a strict xfail) says what that kernel lacks.
        return REGRESSED if head in ("FAIL", "ERROR") else ONLY_HEAD
    if head is None:
        return ONLY_BASE
    before, after = held(base), held(head)
    if before is None or after is None:
        return SKIPPED
    if before and not after:
        return REGRESSED
    if after and not before:
        return FIXED
    return PASSES if after else FAILS_ON_BOTH


def compare(base: SuiteResult, head: SuiteResult) -> List[Change]:
    changes = []
    for test_id in sorted(set(base.status) | set(head.status)):
        b, h = base.status.get(test_id), head.status.get(test_id)
        faulted = [side for side, r in (("base", base), ("head", head)) if test_id in r.faults]
        kind = SKIPPED if faulted else kind_of(b, h)
        message = (base if kind == FIXED else head).message.get(test_id, "")
        if kind == ONLY_BASE:
            message = base.message.get(test_id, "")
        if faulted:
            side = base if faulted[0] == "base" else head
            message = (f"not judged: the rig failed on it on {' and '.join(faulted)}: "
                       f"{side.message.get(test_id, '')}")
        changes.append(Change(test_id, kind, b, h, message))
    return sorted(changes, key=lambda c: (KINDS.index(c.kind), c.test_id))


def of_kind(changes: List[Change], kind: str) -> List[Change]:
    return [c for c in changes if c.kind == kind]
