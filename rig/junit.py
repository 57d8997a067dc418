"""Read pytest's JUnit XML: the verdict and failure message of each test."""
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict


def verdicts(junit: Path) -> Dict[str, str]:
    """test id -> passed, failed, error, skipped or xfailed, from a JUnit XML file."""
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        test_id = f"{case.get('classname')}::{case.get('name')}"
        verdict = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                verdict = "failed" if child.tag == "failure" else "error"
            elif child.tag == "skipped":
                verdict = "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
        out[test_id] = verdict
    return out


def failure_messages(junit: Path) -> Dict[str, str]:
    """test id -> the first line of its failure or error message."""
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        for child in case:
            if child.tag in ("failure", "error"):
                msg = (child.get("message") or child.text or "").strip().splitlines()
                out[f"{case.get('classname')}::{case.get('name')}"] = msg[0] if msg else ""
    return out
