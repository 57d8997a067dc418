"""The gate's results in the formats CI systems read: JUnit XML (one test
case per test, failing only where the change regressed, an error where head
errored), KTAP (base, head and the comparison as nested suites, with the
ERROR, SKIP and XFAIL directives), KCIDB v4.3 JSON (checkouts, builds, tests
with KCIDB statuses and their environment) and a short text summary."""
import hashlib
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from rig.tools.gate.compare import (FAILS_ON_BOTH, FIXED, KINDS, ONLY_HEAD, PASSES, REGRESSED,
                                    Change, SuiteResult, of_kind)

ORIGIN = "printk_rig"


@dataclass
class Side:
    """What a report needs to know of one revision."""
    label: str                    # base / head
    name: str                     # commit[+patch]
    commit: str
    patch_sha256: Optional[str]
    repo: str                     # the local tree
    build: dict                   # the cache manifest of its kernel
    suite: Optional[SuiteResult] = None
    started: str = ""             # ISO 8601, when its build began
    repo_url: str = ""            # the tree's https:// or git:// URL, if it has one
    # sha256 of every patch applied onto the commit, in order (its own patch,
    # then kernel-patches/series with --series); None: just patch_sha256
    patches: Optional[List[str]] = None


@dataclass
class GateResult:
    base: Side
    head: Side
    changes: List[Change]
    config: str                   # what the kernels were configured with
    started: str
    extra: Dict[str, str] = field(default_factory=dict)
    run_id: str = "run"           # unique per gate run: KCIDB ids must not collide

    @property
    def regressed(self) -> List[Change]:
        return of_kind(self.changes, REGRESSED)


def summary(res: GateResult) -> str:
    counts = {k: len(of_kind(res.changes, k)) for k in KINDS}
    lines = [f"gate: base {res.base.name}, head {res.head.name} ({res.config})",
             "  " + ", ".join(f"{n} {k}" for k, n in counts.items() if n)]
    for kind in (REGRESSED, FIXED, FAILS_ON_BOTH):
        for c in of_kind(res.changes, kind):
            lines.append(f"  {kind.upper()}: {c.test_id} ({c.base} -> {c.head})")
            if c.message:
                lines.append(f"      {c.message[:300]}")
    verdict = (f"REGRESSION: {len(res.regressed)} test(s) held on base and fail on head"
               if res.regressed else "no regression")
    return "\n".join(lines + [f"verdict: {verdict}"]) + "\n"


def junit(res: GateResult) -> bytes:
    """One <testcase> per test: failure when regressed, skipped when it fails
    on both sides (not this change's doing) or was not judged."""
    errored = [c for c in res.regressed if c.head == "ERROR"]
    suite = ET.Element("testsuite", name="printk-rig gate", tests=str(len(res.changes)),
                       failures=str(len(res.regressed) - len(errored)),
                       errors=str(len(errored)), timestamp=res.started)
    props = ET.SubElement(suite, "properties")
    for key, val in (("base", res.base.name), ("head", res.head.name), ("config", res.config)):
        ET.SubElement(props, "property", name=key, value=val)
    skipped = 0
    for c in res.changes:
        classname, _, name = c.test_id.rpartition("::")
        head_time = res.head.suite.seconds.get(c.test_id, 0.0) if res.head.suite else 0.0
        case = ET.SubElement(suite, "testcase", classname=classname, name=name,
                             time=f"{head_time:.3f}")
        where = f"base {c.base or 'not run'}, head {c.head or 'not run'}"
        if c.kind == REGRESSED:
            ET.SubElement(case, "error" if c.head == "ERROR" else "failure",
                          message=f"regressed ({where}): {c.message}",
                          type="regression").text = c.message
        elif c.kind == FAILS_ON_BOTH:
            # It ran on both; this change did not break it.
            ET.SubElement(case, "system-out").text = f"fails on both ({where}): {c.message}"
        elif c.kind not in (FIXED, PASSES) and not (c.kind == ONLY_HEAD and c.head == "PASS"):
            skipped += 1
            ET.SubElement(case, "skipped", message=f"{c.kind} ({where}): {c.message}")
        if c.kind == FIXED:
            ET.SubElement(case, "system-out").text = f"fixed ({where}): was {c.message}"
    suite.set("skipped", str(skipped))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="utf-8")


def ktap_name(test_id: str) -> str:
    """KTAP test names: no '#' (a directive would start there) and no newline."""
    return re.sub(r"[#\s]+", "_", test_id)


def diagnostic(text: str) -> str:
    return " ".join(text.replace("#", "").split())[:300]


def result_line(ok: bool, n: int, test_id: str, directive: str = "", why: str = "") -> str:
    line = f"{'ok' if ok else 'not ok'} {n} {ktap_name(test_id)}"
    return f"{line} # {directive} {diagnostic(why)}".rstrip() if directive else line


def ktap(res: GateResult) -> str:
    """KTAP version 1: the suite on base, the suite on head, and the gate,
    whose cases fail where the change regressed. Directives say what they
    mean: ERROR for a test that broke, XFAIL for a strict xfail, SKIP for a
    test that did not run or was not judged."""
    out = ["KTAP version 1", "1..3"]

    def subtest(number: int, name: str, cases: List[str], ok: bool) -> None:
        plan = sum(not c.startswith("#") for c in cases)     # diagnostics do not count
        out.extend(["    KTAP version 1", f"    # Subtest: {name}",
                    f"    1..{plan}"] + [f"    {c}" for c in cases])
        out.append(f"{'ok' if ok else 'not ok'} {number} {name}")

    for number, side in enumerate((res.base, res.head), 1):
        cases, ok = [], True
        status = side.suite.status if side.suite else {}
        messages = side.suite.message if side.suite else {}
        for n, test_id in enumerate(sorted(status), 1):
            st, why = status[test_id], messages.get(test_id, "")
            if st == "SKIP":
                cases.append(result_line(True, n, test_id, "SKIP", why))
            elif st == "PASS":
                cases.append(result_line(True, n, test_id))
            elif st == "XFAIL":
                cases.append(result_line(True, n, test_id, "XFAIL", why))
            elif st == "ERROR":
                ok = False
                cases.append(result_line(False, n, test_id, "ERROR", why))
            else:
                ok = False
                cases += [f"# {diagnostic(why)}"] if why else []
                cases.append(result_line(False, n, test_id))
        subtest(number, f"{side.label}_{side.name}", cases, ok)
    cases = []
    for n, c in enumerate(res.changes, 1):
        where = f"base {c.base or 'not run'}, head {c.head or 'not run'}"
        if c.kind == REGRESSED and c.head == "ERROR":
            cases.append(result_line(False, n, c.test_id, "ERROR", f"regressed: {c.message}"))
        elif c.kind == REGRESSED:
            cases.append(f"# regressed ({where}): {diagnostic(c.message)}")
            cases.append(result_line(False, n, c.test_id))
        elif c.kind == FAILS_ON_BOTH:
            cases.append(f"# fails on both ({where}): {diagnostic(c.message)}")
            cases.append(result_line(True, n, c.test_id))
        elif c.kind in (FIXED, PASSES) or (c.kind == ONLY_HEAD and c.head == "PASS"):
            cases.append(result_line(True, n, c.test_id))
        elif c.kind == ONLY_HEAD and c.head == "XFAIL":
            cases.append(result_line(True, n, c.test_id, "XFAIL", c.message))
        else:
            cases.append(result_line(True, n, c.test_id, "SKIP", f"{c.kind} ({where})"))
    subtest(3, "gate", cases, not res.regressed)
    return "\n".join(out) + "\n"


def kcidb_path(test_id: str) -> str:
    """KCIDB test paths are dot-separated nodes: printk_rig.<file>.<test>."""
    module, _, name = test_id.rpartition("::")
    nodes = [ORIGIN] + [re.sub(r"[^A-Za-z0-9_-]+", "_", part).strip("_")
                        for part in re.split(r"[./]", module) + [name] if part]
    return ".".join(n for n in nodes if n)


def patchset_hash(patch_sha256s: List[str]) -> str:
    """KCIDB's patchset_hash: the sha256 of the newline-terminated sha256 of
    each patch, in order; empty for no patches."""
    if not patch_sha256s:
        return ""
    return hashlib.sha256("".join(f"{h}\n" for h in patch_sha256s).encode()).hexdigest()


# KCIDB statuses; a strict xfail is a FAIL the test expected (misc says so).
KCIDB_STATUS = {"PASS": "PASS", "FAIL": "FAIL", "ERROR": "ERROR", "SKIP": "SKIP",
                "XFAIL": "FAIL"}
# The machine the gate boots: pytest's defaults (rig.pytest_plugin), TCG.
ENVIRONMENT = {"comment": "QEMU x86_64 (the rig's build, with the instrumented rig-serial "
                          "UART), 2 vCPUs",
               "misc": {"machine": "pc", "cpu": "qemu64", "vcpus": 2}}


def kcidb(res: GateResult) -> dict:
    """KCIDB v4.3 JSON: a checkout and a build per side, a test per test and
    side; ids are unique per gate run."""
    checkouts, builds, tests = [], [], []
    for side in (res.base, res.head):
        checkout_id = f"{ORIGIN}:{res.run_id}-{side.label}-{side.name}"
        checkout = {"id": checkout_id, "origin": ORIGIN,
                    "git_commit_hash": side.commit, "start_time": side.started or res.started,
                    "patchset_hash": patchset_hash(
                        side.patches if side.patches is not None
                        else [side.patch_sha256] if side.patch_sha256 else []),
                    "valid": True, "misc": {"gate_side": side.label, "tree": side.repo}}
        if side.repo_url:
            checkout["git_repository_url"] = side.repo_url
        checkouts.append(checkout)
        build_id = f"{checkout_id}:build"
        b = side.build or {}
        builds.append({"id": build_id, "checkout_id": checkout_id, "origin": ORIGIN,
                       "architecture": "x86_64", "config_name": res.config,
                       "compiler": b.get("inputs", {}).get("toolchain", ""),
                       "start_time": side.started or res.started,
                       "duration": b.get("build_seconds", 0), "valid": bool(b),
                       "misc": {"cache_key": b.get("key", ""),
                                "kernel_release": b.get("outputs", {}).get("kernel_release",
                                                                            "")}})
        suite = side.suite
        for test_id in sorted(suite.status if suite else {}):
            tests.append({"id": f"{build_id}:{test_id}", "build_id": build_id,
                          "origin": ORIGIN, "path": kcidb_path(test_id),
                          "status": KCIDB_STATUS[suite.status[test_id]], "comment": test_id,
                          "duration": round(suite.seconds.get(test_id, 0.0), 3),
                          "start_time": side.started or res.started,
                          "environment": ENVIRONMENT,
                          **({"misc": {"expected_failure": True}}
                             if suite.status[test_id] == "XFAIL" else {}),
                          **({"log_excerpt": suite.message[test_id][:16384]}
                             if test_id in suite.message else {})})
    return {"version": {"major": 4, "minor": 3}, "checkouts": checkouts, "builds": builds,
            "tests": tests}


def write_all(res: GateResult, out) -> Dict[str, str]:
    """summary.txt, junit.xml, results.ktap, kcidb.json into directory out."""
    files = {"summary.txt": summary(res).encode(), "junit.xml": junit(res),
             "results.ktap": ktap(res).encode(),
             "kcidb.json": (json.dumps(kcidb(res), indent=2) + "\n").encode()}
    for name, data in files.items():
        (out / name).write_bytes(data)
    return {name: str(out / name) for name in files}
