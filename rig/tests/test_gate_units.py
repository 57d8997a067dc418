"""ci/gate without kernel builds: the verdict comparison, the JUnit, KTAP and
KCIDB writers, and the errors for a bad tree, revision or patch."""
import json
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest

from rig.gate import formats
from rig.gate.compare import (FAILS_ON_BOTH, FIXED, ONLY_HEAD, PASSES, REGRESSED, SKIPPED,
                              SuiteResult, compare, kind_of)
from rig.gate.main import EXIT_CANNOT, main
from rig.gate.source import GateError, Revision, check_patch_applies, resolve
from rig.junit import verdicts

S2 = "scenarios.test_s02_cpu_tagging::test_emergency_cpu[custom]"
S9 = "scenarios.test_s09_flood_no_loss::test_flood[custom]"
BOOT = "scenarios.test_boot::test_boot[custom]"
S13 = "scenarios.test_s13_history_for_new_console::test_history[custom]"


def suite(status, message=None):
    return SuiteResult(status, message or {}, {t: 1.5 for t in status})


BASE = suite({S2: "PASS", S9: "FAIL", BOOT: "PASS", S13: "FAIL"},
             {S9: "2 INFO records missing", S13: "history incomplete"})
HEAD = suite({S2: "FAIL", S9: "FAIL", BOOT: "PASS", S13: "PASS"},
             {S2: "/dev/kmsg record seq 199 has CPU field 0, the module printed it on CPU 1",
              S9: "3 INFO records missing"})


def result(base=BASE, head=HEAD):
    sides = [formats.Side(label, f"{label[0] * 12}", label[0] * 40, None, "/src/linux",
                          {"key": "k", "build_seconds": 300, "inputs": {"toolchain": "gcc"},
                           "outputs": {"kernel_release": "6.12.0-rig"}}, s)
             for label, s in (("base", base), ("head", head))]
    return formats.GateResult(sides[0], sides[1], compare(base, head),
                              "tinyconfig + kernel-patches/rig.config", "2026-12-04T00:00:00+00:00")


def test_kinds_follow_whether_the_property_held():
    assert kind_of("PASS", "FAIL") == REGRESSED
    assert kind_of("PASS", "ERROR") == REGRESSED
    assert kind_of("FAIL", "PASS") == FIXED
    assert kind_of("FAIL", "ERROR") == FAILS_ON_BOTH
    assert kind_of("PASS", "PASS") == PASSES
    assert kind_of("PASS", "SKIP") == SKIPPED
    assert kind_of(None, "FAIL") == ONLY_HEAD


def test_compare_lists_regressions_first_with_heads_message():
    changes = compare(BASE, HEAD)
    assert [(c.kind, c.test_id) for c in changes] == [
        (REGRESSED, S2), (FIXED, S13), (FAILS_ON_BOTH, S9), (PASSES, BOOT)]
    assert changes[0].message.startswith("/dev/kmsg record seq 199 has CPU field 0")
    assert changes[1].message == "history incomplete"      # what base said, now fixed


def test_xfail_is_a_property_that_did_not_hold(tmp_path):
    junit = tmp_path / "j.xml"
    junit.write_text('<testsuites><testsuite><testcase classname="a" name="t">'
                     '<skipped type="pytest.xfail" message="vanilla lacks it"/></testcase>'
                     '<testcase classname="a" name="u"><error message="boot hung"/></testcase>'
                     '</testsuite></testsuites>')
    res = SuiteResult.read(junit)
    assert res.status == {"a::t": "FAIL", "a::u": "ERROR"}
    assert res.message["a::u"] == "boot hung"


def test_summary_names_the_regressed_property():
    text = formats.summary(result())
    assert f"REGRESSED: {S2} (PASS -> FAIL)" in text
    assert "has CPU field 0" in text
    assert text.rstrip().endswith("REGRESSION: 1 test(s) held on base and fail on head")
    assert formats.summary(result(head=BASE)).rstrip().endswith("verdict: no regression")


def test_junit_fails_only_the_regressions(tmp_path):
    (tmp_path / "gate.xml").write_bytes(formats.junit(result()))
    v = verdicts(tmp_path / "gate.xml")
    assert v == {S2: "failed", S9: "skipped", BOOT: "passed", S13: "passed"}
    case = ET.parse(tmp_path / "gate.xml").getroot().find(".//failure")
    assert "regressed (base PASS, head FAIL)" in case.get("message")


def parse_ktap(text):
    """A small KTAP reader: top-level results and each subtest's results."""
    lines = text.splitlines()
    assert lines[0] == "KTAP version 1" and lines[1] == "1..3"
    subtests, current, top = {}, [], []
    for line in lines[2:]:
        if line.startswith("    "):
            current.append(line[4:])
        elif re.match(r"(not )?ok \d+ ", line):
            m = re.match(r"(not )?ok \d+ (.*)$", line)
            ok, name = m.group(1) is None, m.group(2)
            top.append((ok, name))
            subtests[name] = current
            current = []
    return top, subtests


def test_ktap_nests_base_head_and_gate():
    top, subtests = parse_ktap(formats.ktap(result()))
    assert top == [(False, "base_bbbbbbbbbbbb"), (False, "head_hhhhhhhhhhhh"), (False, "gate")]
    gate = subtests["gate"]
    assert gate[:3] == ["KTAP version 1", "# Subtest: gate", "1..4"]
    assert f"not ok 1 {S2}" in gate
    assert f"ok 3 {S9} # SKIP fails on both" in gate
    assert "# regressed: /dev/kmsg record seq 199 has CPU field 0, the module printed it on " \
        "CPU 1" in gate
    top, _ = parse_ktap(formats.ktap(result(base=BASE, head=BASE)))
    assert top[2] == (True, "gate")


def test_kcidb_has_checkouts_builds_and_tests():
    data = json.loads(json.dumps(formats.kcidb(result())))
    assert data["version"]["major"] == 4
    assert [c["git_commit_hash"] for c in data["checkouts"]] == ["b" * 40, "h" * 40]
    assert all(b["checkout_id"] in {c["id"] for c in data["checkouts"]} for b in data["builds"])
    build_ids = {b["id"] for b in data["builds"]}
    assert len(data["tests"]) == 8 and all(t["build_id"] in build_ids for t in data["tests"])
    head_s2 = [t for t in data["tests"] if t["comment"] == S2 and "head" in t["build_id"]][0]
    assert head_s2["status"] == "FAIL"
    assert head_s2["path"] == "printk_rig.scenarios.test_s02_cpu_tagging.test_emergency_cpu_custom"
    assert "CPU field 0" in head_s2["log_excerpt"]
    assert {t["status"] for t in data["tests"]} <= {"FAIL", "ERROR", "MISS", "PASS", "DONE",
                                                    "SKIP"}


@pytest.fixture
def small_repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args):
        subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                        *args], check=True, capture_output=True)
    (repo / "printk.c").write_text("int a;\nint b;\n")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "base")
    return repo


def test_bad_tree_and_revision_are_named(tmp_path, small_repo):
    with pytest.raises(GateError, match="no such directory"):
        resolve(tmp_path / "nope", "HEAD")
    (tmp_path / "plain").mkdir()
    with pytest.raises(GateError, match="not a git checkout"):
        resolve(tmp_path / "plain", "HEAD")
    with pytest.raises(GateError, match="no commit 'v9.9'"):
        resolve(small_repo, "v9.9")
    assert len(resolve(small_repo, "HEAD")) == 40


def test_a_patch_that_does_not_apply_shows_the_hunk(tmp_path, small_repo):
    bad = tmp_path / "bad.patch"
    bad.write_text("--- a/printk.c\n+++ b/printk.c\n@@ -1,2 +1,2 @@\n int x;\n-int b;\n+int c;\n")
    with pytest.raises(GateError) as e:
        check_patch_applies(small_repo, resolve(small_repo, "HEAD"), bad)
    assert "does not apply" in str(e.value) and "printk.c:1" in str(e.value)
    good = tmp_path / "good.patch"
    good.write_text("--- a/printk.c\n+++ b/printk.c\n@@ -1,2 +1,2 @@\n int a;\n-int b;\n+int c;\n")
    rev = Revision.of("head", small_repo, "HEAD", good)
    assert rev.name.endswith("+good.patch") and "patch sha256:" in rev.digest()
    # The same commit from another path is the same kernel.
    assert str(small_repo) not in rev.digest()


def test_gate_exits_2_with_the_reason(tmp_path, small_repo, capsys):
    assert main(["--tree", str(small_repo), "--base", "HEAD", "--head", "nope",
                 "--out", str(tmp_path / "out")]) == EXIT_CANNOT
    assert "CANNOT JUDGE: --tree" in capsys.readouterr().err
