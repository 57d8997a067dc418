"""ci/gate without kernel builds: the verdict comparison, the JUnit, KTAP and
KCIDB writers, and the errors for a bad tree, revision or patch."""
import hashlib
import json
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from rig.tools.gate import formats
from rig.tools.gate.compare import (FAILS_ON_BOTH, FIXED, ONLY_HEAD, PASSES, REGRESSED, SKIPPED,
                                    SuiteResult, compare, kind_of)
from rig.tools.gate.formats import ktap_name
from rig.tools.gate.main import EXIT_CANNOT, main
from rig.tools.gate.source import GateError, Revision, check_patch_applies, resolve
from rig.tools.junit import verdicts

DATA = Path(__file__).parent / "data"

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
    assert kind_of(None, "FAIL") == REGRESSED          # a new test that fails on head
    assert kind_of(None, "ERROR") == REGRESSED
    assert kind_of(None, "XFAIL") == ONLY_HEAD         # says what that kernel lacks
    assert kind_of(None, "PASS") == ONLY_HEAD


def test_compare_lists_regressions_first_with_heads_message():
    changes = compare(BASE, HEAD)
    assert [(c.kind, c.test_id) for c in changes] == [
        (REGRESSED, S2), (FIXED, S13), (FAILS_ON_BOTH, S9), (PASSES, BOOT)]
    assert changes[0].message.startswith("/dev/kmsg record seq 199 has CPU field 0")
    assert changes[1].message == "history incomplete"      # what base said, now fixed


def test_a_test_the_rig_failed_on_is_not_judged_never_a_regression():
    head = SuiteResult({S2: "ERROR", BOOT: "PASS"},
                       {S2: "CacheEntryError: [kernel-custom] cache entry X is damaged"},
                       {S2: 1.0, BOOT: 1.0}, {S2})
    changes = {c.test_id: c for c in compare(suite({S2: "PASS", BOOT: "PASS"}), head)}
    assert changes[S2].kind == SKIPPED
    assert changes[S2].message == ("not judged: the rig failed on it on head: CacheEntryError: "
                                   "[kernel-custom] cache entry X is damaged")
    assert changes[BOOT].kind == PASSES


def test_xfail_is_a_property_that_did_not_hold(tmp_path):
    junit = tmp_path / "j.xml"
    junit.write_text('<testsuites><testsuite><testcase classname="a" name="t">'
                     '<skipped type="pytest.xfail" message="vanilla lacks it"/></testcase>'
                     '<testcase classname="a" name="u"><error message="boot hung"/></testcase>'
                     '</testsuite></testsuites>')
    res = SuiteResult.read(junit)
    assert res.status == {"a::t": "XFAIL", "a::u": "ERROR"}
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
    # A test that fails on both ran: it passes the gate, which asks whether
    # the change broke it.
    assert v == {S2: "failed", S9: "passed", BOOT: "passed", S13: "passed"}
    case = ET.parse(tmp_path / "gate.xml").getroot().find(".//failure")
    assert "regressed (base PASS, head FAIL)" in case.get("message")
    # An error on head is an error, and counted as one.
    errored = result(head=suite({**HEAD.status, S2: "ERROR"}, HEAD.message))
    root = ET.fromstring(formats.junit(errored))
    assert root.find("testsuite").get("errors") == "1"
    assert root.find("testsuite").get("failures") == "0"
    assert root.find(".//error").get("message").startswith("regressed (base PASS, head ERROR)")


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
    assert f"ok 3 {S9}" in gate
    assert "# fails on both (base FAIL, head FAIL): 3 INFO records missing" in gate
    assert "# regressed (base PASS, head FAIL): /dev/kmsg record seq 199 has CPU field 0, the " \
        "module printed it on CPU 1" in gate
    top, _ = parse_ktap(formats.ktap(result(base=BASE, head=BASE)))
    assert top[2] == (True, "gate")


def test_ktap_directives_for_errors_xfails_and_new_tests():
    new = "scenarios.test_new::test_new[custom]"
    head = suite({**HEAD.status, BOOT: "ERROR", S13: "XFAIL", new: "FAIL"},
                 {**HEAD.message, BOOT: "boot hung in phase kernel", new: "new check fails",
                  S13: "custom: lacks it"})
    _, subtests = parse_ktap(formats.ktap(result(head=head)))
    side = subtests["head_hhhhhhhhhhhh"]
    assert any(ln.endswith(f"{ktap_name(BOOT)} # ERROR boot hung in phase kernel") and
               ln.startswith("not ok") for ln in side)
    assert any(ln.endswith(f"{ktap_name(S13)} # XFAIL custom: lacks it") and ln.startswith("ok")
               for ln in side)
    gate = subtests["gate"]
    assert any(ln.startswith("not ok") and ln.endswith(ktap_name(new)) for ln in gate)


def test_kcidb_validates_against_the_v4_3_schema():
    schema = json.loads((DATA / "kcidb-v04_03.schema.json").read_text())
    res = result()
    res.head.commit, res.head.patch_sha256 = "c" * 40, "a" * 64
    res.head.repo_url = "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git"
    data = json.loads(json.dumps(formats.kcidb(res)))
    jsonschema.validate(data, schema, format_checker=jsonschema.FormatChecker())
    head = data["checkouts"][1]
    # KCIDB's definition: the sha256 of each patch's newline-terminated sha256.
    assert head["patchset_hash"] == hashlib.sha256(("a" * 64 + "\n").encode()).hexdigest()
    assert data["checkouts"][0]["patchset_hash"] == ""
    assert "git_repository_url" not in data["checkouts"][0]       # a local tree has none
    assert all(t["environment"]["comment"].startswith("QEMU x86_64") for t in data["tests"])
    # Ids are unique per run.
    other = formats.GateResult(res.base, res.head, res.changes, res.config, res.started,
                               run_id="another")
    assert not {c["id"] for c in data["checkouts"]} & {
        c["id"] for c in formats.kcidb(other)["checkouts"]}
    # A field the schema forbids is caught: the local path as the repository URL.
    res.base.repo_url = "/src/linux"
    with pytest.raises(jsonschema.ValidationError, match="does not match"):
        jsonschema.validate(formats.kcidb(res), schema)


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


def test_a_new_test_skipped_on_head_is_skipped_in_junit(tmp_path):
    new = "scenarios.test_new::test_new[custom]"
    head = suite({**HEAD.status, new: "SKIP"}, HEAD.message)
    (tmp_path / "gate.xml").write_bytes(formats.junit(result(head=head)))
    assert verdicts(tmp_path / "gate.xml")[new] == "skipped"
