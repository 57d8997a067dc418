"""The results of a pytest run in the forms CI systems read, from its JUnit
XML: KTAP (Documentation/dev-tools/ktap.rst, parsed by the kernel's
tools/testing/kunit/kunit.py) and a JSON summary. `make test` writes both
next to runs/junit.xml (`rig results`).

KTAP: a passed test is `ok`, a failed one `not ok` with its message as
diagnostic lines, an errored one `not ok ... # ERROR message` (the test or
its boot broke, not the property), a skipped one `ok ... # SKIP reason`, a
strict xfail `ok ... # XFAIL reason` (the property fails as expected for that
kernel, which the reason names).
"""
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Dict, List

from rig.tools.junit import failure_messages, skip_reasons, suite_properties, verdicts, \
    wall_times

SUITE = "printk-rig"


def ktap_name(test_id: str) -> str:
    """KTAP test names: no '#' (a directive would start there) and no whitespace."""
    return re.sub(r"[#\s]+", "_", test_id)


def one_line(text: str, limit: int = 300) -> str:
    return " ".join(text.replace("#", "").split())[:limit]


def ktap(status: Dict[str, str], messages: Dict[str, str], reasons: Dict[str, str],
         profile: str = "") -> str:
    cases: List[str] = []
    for n, test_id in enumerate(sorted(status), 1):
        name, st = ktap_name(test_id), status[test_id]
        if st == "passed":
            cases.append(f"ok {n} {name}")
        elif st == "failed":
            cases += [f"# {line}" for line in messages.get(test_id, "").splitlines()[:5]]
            cases.append(f"not ok {n} {name}")
        elif st == "error":
            cases.append(f"not ok {n} {name} # ERROR {one_line(messages.get(test_id, ''))}")
        elif st == "xfailed":
            cases.append(f"ok {n} {name} # XFAIL {one_line(reasons.get(test_id, ''))}")
        else:
            cases.append(f"ok {n} {name} # SKIP {one_line(reasons.get(test_id, ''))}")
    ok = all(st not in ("failed", "error") for st in status.values())
    if not status:
        # kunit.py parse takes an empty plan for a crash: say that nothing ran.
        return ("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: " + SUITE +
                "\n    1..0\nok 1 " + SUITE + " # SKIP no tests ran\n")
    lines = ["KTAP version 1", "1..1", "    KTAP version 1", f"    # Subtest: {SUITE}",
             *([f"    # kernel profile: {profile}"] if profile else []),
             f"    1..{len(status)}"] + [f"    {c}" for c in cases]
    lines.append(f"{'ok' if ok else 'not ok'} 1 {SUITE}")
    return "\n".join(lines) + "\n"


def summary(status: Dict[str, str], messages: Dict[str, str], reasons: Dict[str, str],
            seconds: Dict[str, float], profile: str = "") -> Dict:
    return {"suite": SUITE, **({"profile": profile} if profile else {}),
            "counts": dict(sorted(Counter(status.values()).items())),
            "ok": bool(status) and all(st not in ("failed", "error") for st in status.values()),
            "tests": {t: {"status": st, "seconds": round(seconds.get(t, 0.0), 3),
                          **({"message": messages[t]} if t in messages else {}),
                          **({"reason": reasons[t]} if t in reasons else {})}
                      for t, st in sorted(status.items())}}


def write(junit: Path, out_dir: Path) -> Dict[str, Path]:
    """results.ktap and results.json from junit into out_dir."""
    status, messages = verdicts(junit), failure_messages(junit)
    reasons, seconds = skip_reasons(junit), wall_times(junit)
    profile = suite_properties(junit).get("profile", "")
    files = {"results.ktap": ktap(status, messages, reasons, profile),
             "results.json": json.dumps(summary(status, messages, reasons, seconds, profile),
                                        indent=1) + "\n"}
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        tmp = out_dir / f".{name}.tmp"
        tmp.write_text(text)
        tmp.replace(out_dir / name)
    return {name: out_dir / name for name in files}


def main(junit: str, out_dir: str = "") -> int:
    path = Path(junit)
    if not path.is_file():
        print(f"rig results: {junit}: no such JUnit XML file (run pytest with "
              f"--junitxml={junit})", file=sys.stderr)
        return 2
    written = write(path, Path(out_dir) if out_dir else path.parent)
    print("results: " + ", ".join(str(p) for p in written.values()))
    return 0
