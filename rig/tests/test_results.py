"""rig results: KTAP and a JSON summary from pytest's JUnit XML, and the
kernel's own KTAP parser reading them."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rig.tools import results
from rig.tools.junit import JUnitError

DATA = Path(__file__).parent / "data"
EVERY_STATUS = DATA / "pytest-every-status.junit.xml"   # pass, fail, error, skip, xfail


def test_every_status_gets_its_ktap_directive(tmp_path):
    ktap = results.write(EVERY_STATUS, tmp_path)["results.ktap"].read_text().splitlines()
    assert ktap[:5] == ["KTAP version 1", "1..1", "    KTAP version 1",
                        "    # Subtest: printk-rig", "    1..5"]
    assert ktap[5:] == [
        '    not ok 1 scenarios.test_a::test_err[patched] # ERROR failed on setup with '
        '"BuildError: no kernel"',
        "    # emergency immediacy: line not written # during call",
        "    not ok 2 scenarios.test_a::test_fail[patched]",
        "    ok 3 scenarios.test_a::test_pass[patched]",
        "    ok 4 scenarios.test_a::test_skip # SKIP no libvirt",
        "    ok 5 scenarios.test_a::test_xfail[vanilla] # XFAIL vanilla: no CPU field",
        "not ok 1 printk-rig"]


def test_json_summary_counts_and_names_each_test(tmp_path):
    got = json.loads(results.write(EVERY_STATUS, tmp_path)["results.json"].read_text())
    assert got["counts"] == {"error": 1, "failed": 1, "passed": 1, "skipped": 1, "xfailed": 1}
    assert got["ok"] is False
    assert got["tests"]["scenarios.test_a::test_xfail[vanilla]"] == {
        "status": "xfailed", "seconds": 3.0, "reason": "vanilla: no CPU field"}


def test_missing_junit_is_named(capsys):
    assert results.main("/nonexistent/junit.xml") == 2
    assert "no such JUnit XML file" in capsys.readouterr().err


def kunit_py() -> Path:
    """tools/testing/kunit/kunit.py of the kernel source the rig builds from."""
    from rig.artifacts.kernel import kernel_step
    script = kernel_step("vanilla").dir / "src" / "tools" / "testing" / "kunit" / "kunit.py"
    if not script.is_file():
        pytest.fail(f"no {script}: build the vanilla kernel first (make kernel)", pytrace=False)
    return script


@pytest.mark.builds
@pytest.mark.parametrize("junit", [EVERY_STATUS, None], ids=["every-status", "empty"])
def test_the_kernels_ktap_parser_reads_it(tmp_path, junit):
    if junit is None:
        junit = tmp_path / "empty.xml"
        junit.write_text('<?xml version="1.0"?><testsuites><testsuite name="pytest" '
                         'tests="0"></testsuite></testsuites>')
    ktap = results.write(junit, tmp_path)["results.ktap"]
    out = subprocess.run([sys.executable, str(kunit_py()), "parse", str(ktap)],
                         capture_output=True, text=True).stdout
    assert "[ERROR]" not in out and "[CRASHED]" not in out, out
    want = ("Ran 5 tests: passed: 2, failed: 2, skipped: 1" if junit == EVERY_STATUS
            else "Ran 1 tests: skipped: 1")
    assert want in out, out


def test_a_test_failed_on_the_rigs_own_fault_is_an_error_not_a_failure(tmp_path):
    """rig.pytest_plugin marks such a test with the rig_fault property: KTAP
    says ERROR, not a failing property."""
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="scenarios.test_a" name="test_fault[patched]" time="1.0">'
        '<properties><property name="rig_fault" value="2"/></properties>'
        '<failure message="CacheEntryError: [kernel-patched] cache entry X is damaged">'
        'trace</failure></testcase>'
        '<testcase classname="scenarios.test_a" name="test_fail[patched]" time="1.0">'
        '<failure message="AssertionError: a property">trace</failure></testcase>'
        '</testsuite></testsuites>')
    ktap = results.write(junit, tmp_path)["results.ktap"].read_text()
    assert "not ok 1 scenarios.test_a::test_fail[patched]\n" in ktap
    assert "not ok 2 scenarios.test_a::test_fault[patched] # ERROR" in ktap


def test_a_cut_junit_file_is_named(tmp_path, capsys):
    junit = tmp_path / "junit.xml"
    junit.write_text('<testsuites><testsuite name="pytest"><testcase classname="a" na')
    with pytest.raises(JUnitError, match=r"junit.xml: not valid XML"):
        results.write(junit, tmp_path)


def test_a_crashed_worker_is_the_rigs_fault(tmp_path):
    """pytest-xdist's report of a worker that died under a test."""
    from rig.tools.junit import rig_faults
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="scenarios.test_a" name="test_x[patched]" time="1.0">'
        '<error message="worker \'gw1\' crashed while running '
        '\'scenarios/test_a.py::test_x[patched]\'">trace</error></testcase>'
        '</testsuite></testsuites>')
    assert rig_faults(junit) == {"scenarios.test_a::test_x[patched]"}
