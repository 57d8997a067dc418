from rig.tools.flakes import disagreements
from rig.tools.junit import failure_messages, verdicts

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="scenarios.test_s02" name="test_s2[patched]" time="3"/>
<testcase classname="scenarios.test_s02" name="test_s2[vanilla]" time="3">
  <skipped type="pytest.xfail" message="vanilla: no CPU field"/></testcase>
<testcase classname="scenarios.test_s04" name="test_s4[patched]" time="5">
  <failure message="assert">boom</failure></testcase>
</testsuite></testsuites>"""


def test_verdicts_from_junit(tmp_path):
    p = tmp_path / "j.xml"
    p.write_text(JUNIT)
    assert verdicts(p) == {"scenarios.test_s02::test_s2[patched]": "passed",
                           "scenarios.test_s02::test_s2[vanilla]": "xfailed",
                           "scenarios.test_s04::test_s4[patched]": "failed"}


def test_disagreements_name_the_flaky_test():
    a = {"t1": "passed", "t2": "passed"}
    b = {"t1": "passed", "t2": "failed"}
    assert disagreements([a, a, b]) == {"t2": ["passed", "passed", "failed"]}
    assert disagreements([a, {"t1": "passed"}]) == {"t2": ["passed", "absent"]}
    assert disagreements([a, a]) == {}


def test_failure_messages(tmp_path):
    p = tmp_path / "j.xml"
    p.write_text(JUNIT)
    assert failure_messages(p) == {"scenarios.test_s04::test_s4[patched]": "assert"}


def test_wall_times_and_their_median(tmp_path):
    from rig.tools.junit import median_times, wall_times
    p = tmp_path / "j.xml"
    p.write_text(JUNIT)
    t = wall_times(p)
    assert t["scenarios.test_s04::test_s4[patched]"] == 5.0
    assert median_times([{"a": 3.0}, {"a": 1.0}, {"a": 2.0, "b": 4.0}]) == {"a": 2.0, "b": 4.0}
    assert median_times([{"a": 1.0}, {"a": 2.0}]) == {"a": 1.5}
