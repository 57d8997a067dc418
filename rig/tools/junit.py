"""Read pytest's JUnit XML: the verdict, failure message and wall time of each test."""
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set

from rig.faults import PROPERTY, RigFault, worker_crash


class JUnitError(RigFault, ValueError):
    """A JUnit file that cannot be read; names it."""


def testcases(junit: Path) -> Iterator[ET.Element]:
    """The file's testcase elements; JUnitError if it is not JUnit XML."""
    try:
        root = ET.parse(junit).getroot()
    except ET.ParseError as e:
        raise JUnitError(f"{junit}: not valid XML ({e}): a pytest run cut short, or not a "
                         "JUnit file") from None
    except OSError as e:
        raise JUnitError(f"{junit}: cannot be read: {e.strerror or e}") from None
    return root.iter("testcase")


def first_suite(junit: Path) -> Optional[ET.Element]:
    """The file's (first) testsuite element; None if it cannot be read."""
    try:
        root = ET.parse(junit).getroot()
    except (ET.ParseError, OSError):
        return None
    return root if root.tag == "testsuite" else root.find("testsuite")


def suite_properties(junit: Path) -> Dict[str, str]:
    """The run's own properties (pytest's global properties: the kernel
    profile, the flavors chosen, rig.pytest_plugin), name -> value."""
    suite = first_suite(junit)
    return {} if suite is None else {
        prop.get("name"): prop.get("value")
        for props in suite.findall("properties") for prop in props.iter("property")}


def suite_seconds(junit: Path) -> float:
    """The run's wall time (the testsuite's time); 0 if it cannot be read."""
    suite = first_suite(junit)
    return 0.0 if suite is None else float(suite.get("time") or 0)


def verdicts(junit: Path) -> Dict[str, str]:
    """test id -> passed, failed, error, skipped or xfailed, from a JUnit XML file.
    A test that failed on the rig's own fault (its rig_fault property,
    rig.pytest_plugin) is an error: no verdict on the kernel."""
    out = {}
    for case in testcases(junit):
        test_id = f"{case.get('classname')}::{case.get('name')}"
        verdict = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                verdict = "failed" if child.tag == "failure" else "error"
            elif child.tag == "skipped":
                verdict = "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
        if verdict == "failed" and any(prop.get("name") == PROPERTY
                                       for prop in case.iter("property")):
            verdict = "error"
        out[test_id] = verdict
    return out


def rig_faults(junit: Path) -> Set[str]:
    """The tests that failed on the rig's own fault: the rig_fault property,
    or an xdist worker that crashed under them."""
    out = set()
    for case in testcases(junit):
        failed = [c for c in case if c.tag in ("failure", "error")]
        if failed and (any(prop.get("name") == PROPERTY for prop in case.iter("property"))
                       or any(worker_crash(c.get("message") or "") for c in failed)):
            out.add(f"{case.get('classname')}::{case.get('name')}")
    return out


def failure_messages(junit: Path) -> Dict[str, str]:
    """test id -> the first line of its failure or error message."""
    out = {}
    for case in testcases(junit):
        for child in case:
            if child.tag in ("failure", "error"):
                msg = (child.get("message") or child.text or "").strip().splitlines()
                out[f"{case.get('classname')}::{case.get('name')}"] = msg[0] if msg else ""
    return out


def skip_reasons(junit: Path) -> Dict[str, str]:
    """test id -> why it was skipped or is an expected failure (xfail reason)."""
    return {f"{case.get('classname')}::{case.get('name')}": child.get("message") or ""
            for case in testcases(junit)
            for child in case if child.tag == "skipped"}


def run_dirs(junit: Path) -> Dict[str, str]:
    """run directory (resolved) -> test id, from the run_dir properties the
    scenarios' fixtures record."""
    return {str(Path(prop.get("value")).resolve()): f"{case.get('classname')}::{case.get('name')}"
            for case in testcases(junit)
            for prop in case.iter("property") if prop.get("name") == "run_dir"}


def wall_times(junit: Path) -> Dict[str, float]:
    """test id -> its wall time in seconds (setup, call and teardown)."""
    return {f"{case.get('classname')}::{case.get('name')}": float(case.get("time") or 0)
            for case in testcases(junit)}


def phase_times(junit: Path) -> Dict[str, Dict[str, float]]:
    """test id -> {phase: seconds}, from the time_PHASE_s properties the
    scenarios' fixtures record (rig.boot.time_split, plus parse)."""
    out: Dict[str, Dict[str, float]] = {}
    for case in testcases(junit):
        test = f"{case.get('classname')}::{case.get('name')}"
        for prop in case.iter("property"):
            name = prop.get("name") or ""
            if name.startswith("time_") and name.endswith("_s"):
                out.setdefault(test, {})[name[5:-2]] = float(prop.get("value"))
    return out


def median_times(runs: List[Dict[str, float]]) -> Dict[str, float]:
    """test id -> the median of its wall times over the runs it appears in."""
    out = {}
    for test_id in sorted(set().union(*runs)) if runs else []:
        seen = sorted(run[test_id] for run in runs if test_id in run)
        mid = len(seen) // 2
        out[test_id] = seen[mid] if len(seen) % 2 else (seen[mid - 1] + seen[mid]) / 2
    return out
