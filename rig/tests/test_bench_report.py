"""rig bench's table, JSON and check, on figures measured by a real bench
run (1200-line backlog, 2026-12-04); the boots themselves run in make bench."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rig.tools.bench import page, report
from rig.tools.bench.guest import FlavorFigures

ROOT = Path(__file__).resolve().parents[2]

VANILLA = FlavorFigures(
    "vanilla",
    info_idle={"calls": 200, "p50": 6361248, "p99": 6435336, "p999": 13923200, "max": 13923200},
    info_backlog={"calls": 1200, "p50": 71302, "p99": 7677511, "p999": 7697449, "max": 7748692},
    emergency={"ns": 687208646, "physical_ns": 7465278, "line_bytes": 86, "ratio": 92.054},
    throughput={"bytes": 119550, "seconds": 11.369197, "bytes_per_s": 10515.3,
                "limit_bytes_per_s": 11520.0, "ratio": 0.9128})
PATCHED = FlavorFigures(
    "patched",
    info_idle={"calls": 200, "p50": 62728, "p99": 109928, "p999": 303703, "max": 303703},
    info_backlog={"calls": 1200, "p50": 70317, "p99": 88111, "p999": 106952, "max": 33923628},
    emergency={"ns": 8484624, "physical_ns": 8159722, "line_bytes": 94, "ratio": 1.0398},
    throughput={"bytes": 126458, "seconds": 11.900335, "bytes_per_s": 10626.4,
                "limit_bytes_per_s": 11520.0, "ratio": 0.9224})


def test_table_puts_the_flavors_side_by_side():
    text = report.table(VANILLA, PATCHED)
    assert "| INFO printk() p99, backlog | 7,677.5 us | 88.1 us | 87x lower |" in text
    assert "| ... against its own wire time (physical limit) | 92.054x | 1.040x | - |" in text
    assert "| console throughput (bytes per virtual s) | 10,515 | 10,626 | limit 11,520 |" in text
    assert len(text.splitlines()) == 2 + 8 + 4


def test_check_names_the_promise_that_fails():
    problems = report.check(VANILLA, PATCHED)       # 87x at 1200 lines: short of 100x
    assert len(problems) == 1 and "87.1x lower than vanilla's" in problems[0]
    fast = FlavorFigures("patched", PATCHED.info_idle, dict(PATCHED.info_backlog, p99=50000),
                         PATCHED.emergency, PATCHED.throughput)
    assert report.check(VANILLA, fast) == []
    slow = FlavorFigures("patched", PATCHED.info_idle, fast.info_backlog,
                         dict(PATCHED.emergency, ratio=1.2), PATCHED.throughput)
    assert "1.200x its wire time" in report.check(VANILLA, slow)[0]


def test_json_holds_both_flavors_and_the_verdict():
    data = json.loads(report.to_json(VANILLA, PATCHED, {"backlog_lines": 1200}))
    assert data["vanilla"]["info_backlog"]["p99"] == 7677511
    assert data["patched"]["emergency"]["ratio"] == 1.0398
    assert data["check"] and data["meta"]["backlog_lines"] == 1200


# The prbstress module's result lines of a real boot (patched, 4 vCPUs,
# shift 3, 20,000 records per run).
STRESS_LINES = [
    "prbstress: start writers=1,2,3 records=20000 buffer=16384 bytes record=33 bytes cpus=4",
    "prbstress: result writers=1 records=20000 ns=594409340 reserve_failed=0 r0_seen=2406 "
    "r0_lost=17594 r0_bad=0 r1_seen=2502 r1_lost=17498 r1_bad=0",
    "prbstress: result writers=2 records=20000 ns=1311430492 reserve_failed=0 r0_seen=2873 "
    "r0_lost=17127 r0_bad=0 r1_seen=3038 r1_lost=16962 r1_bad=0",
    "prbstress: result writers=3 records=20000 ns=6350352672 reserve_failed=0 r0_seen=11169 "
    "r0_lost=8831 r0_bad=0 r1_seen=11121 r1_lost=8879 r1_bad=0",
]


def test_stress_lines_become_rates_and_reader_shares():
    from rig.tools.bench.guest import stress_results
    runs = stress_results(STRESS_LINES, "run dir")
    assert [r["writers"] for r in runs] == [1, 2, 3]
    assert runs[0]["records_per_s"] == 33647              # 20000 / 0.594409340 s
    assert runs[0]["reader_share"] == [0.1203, 0.1251]
    assert runs[2]["reader_lost"] == [8831, 8879]
    v = FlavorFigures("vanilla", stress=runs)
    text = report.stress_table(v, v)
    assert "| 1 writer, 20,000 records | 33,647 | 33,647 | 12.0% / 12.5% | 12.0% / 12.5% |" in text


def test_a_bad_record_or_a_missing_run_fails_the_stress_figures():
    from rig.tools.bench.guest import BenchError, stress_results
    torn = STRESS_LINES[:3] + [STRESS_LINES[3].replace("r1_bad=0", "r1_bad=2")]
    for lines, says in ((torn, "found 2 bad records"), (STRESS_LINES[:3], "[1, 2] writers")):
        try:
            stress_results(lines, "run dir")
        except BenchError as e:
            assert says in str(e) and "run dir" in str(e)
        else:
            raise AssertionError(f"no BenchError for {says}")


def test_verdict_table_gives_boot_scenario_and_suite_times():
    times = {"boot_to_init_vanilla": {"boots": 5, "median_s": 2.71},
             "boot_to_init_patched": {"boots": 5, "median_s": 2.64},
             "scenarios": {"runs": 5, "workers": 2, "tests": 3, "median_per_test_s": 3.2,
                           "suite_median_s": 270.4, "not_passed": {},
                           "per_test_median_s": {"scenarios.a::t1": 3.2, "scenarios.a::t2": 0.0,
                                                 "scenarios.b::t3": 27.5}}}
    text = report.verdict_table(times)
    assert "| QEMU start to guest init, patched (median of 5 boots) | 2.64 s |" in text
    assert "median over 3 tests of each one's median of 5 runs | 3.20 s |" in text
    assert "| scenario suite, warm, 2 workers (median of 5 runs) | 270 s |" in text
    assert "| slowest: t3 | 27.5 s |" in text


def test_rig_diff_bench_shapes_and_its_target():
    from rig.tools.bench import diff
    d = diff.measure()
    boots = d["different_boots"]
    assert min(boots["bytes"]) >= diff.SIZE and boots["differences"] > 1000
    assert d["changed_block"]["differences"] == diff.BLOCK
    assert d["self"]["differences"] == 0 and "ratio_to_self" in boots
    assert "two different boots" in diff.table(d)
    slow = dict(d, different_boots=dict(boots, s=diff.TARGET_S + 0.5))
    assert diff.check(slow)[0].startswith("rig diff of two different 500 KB boots took 2.50 s")
    assert diff.check(dict(d, different_boots=dict(boots, s=0.1))) == []


def bench_json(tmp_path):
    meta = {"date": "2026-12-04", "machine": "host: 2 x CPU, KVM", "cpus": 2,
            "backlog_lines": 1200, "icount_shift": 4, "stress_records": 100000,
            "stress_vcpus": 4, "units": "guest virtual time"}
    path = tmp_path / "bench.json"
    path.write_text(report.to_json(VANILLA, PATCHED, meta))
    return path


def test_the_measurements_page_is_rendered_from_the_json_and_names_a_broken_promise(tmp_path):
    """rig bench --from FILE --page DIR: the page of a JSON file, by its date,
    with the tables and the check's verdict; --check exits 1 on it."""
    src = bench_json(tmp_path)
    run = subprocess.run([sys.executable, "-m", "rig", "bench", "--from", str(src),
                          "--page", str(tmp_path / "pages"), "--check"],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 1, run.stdout + run.stderr
    text = (tmp_path / "pages" / "2026-12-04.md").read_text()
    assert text.startswith("# Measurements of 2026-12-04\n")
    assert json.loads((tmp_path / "pages" / "2026-12-04.json").read_text()) == json.loads(
        src.read_text())
    assert "| INFO printk() p99, backlog | 7,677.5 us | 88.1 us | 87x lower |" in text
    assert "- CHECK FAILED: patched INFO printk() p99 under the backlog is 87.1x lower" in text
    assert text.split("\n", 3)[3] in run.stdout      # the same page, but for its source
    assert "Time to verdict" not in text       # not measured in this file: no empty table


def test_the_long_log_readers_are_checked_against_their_memory_budget():
    long_logs = {"log_mb": 1024, "budget_mb": 300, "readers": {
        "parse": {"rc": 0, "seconds": 300.0, "peak_rss_mb": 33.0},
        "diff": {"rc": 1, "seconds": 280.0, "peak_rss_mb": 310.0}}}
    data = {"meta": {"date": "2026-12-07", "machine": "m"}, "long_logs": long_logs,
            "input_checks": {"first_ms": 240.0, "later_ms": 2.5, "hashing_ms": 56.5,
                             "mb_checked": 69.4}}
    assert page.problems(data) == ["diff on a 1024 MB log took 310 MB, over the 300 MB budget"]
    text = page.render(data, "x.json")
    assert "| parse | 0 | 300.0 s | 33 MB |" in text
    assert "| of which checking the files (69.4 MB hashed) | 56.5 ms |" in text


def test_every_kept_measurements_page_is_the_render_of_its_json():
    """docs/measurements/DATE.md is generated, never edited: each is what
    rig bench renders from the DATE.json kept beside it."""
    kept = sorted((ROOT / "docs" / "measurements").glob("*.json"))
    assert kept, "no bench JSON in docs/measurements"
    for source in kept:
        rendered = page.render(json.loads(source.read_text()), source.name)
        assert source.with_suffix(".md").read_text() == rendered, (
            f"{source.with_suffix('.md')} is not the page of {source.name}: regenerate it with "
            f"`python3 -m rig bench --from {source} --page docs/measurements`")


def test_phase_totals_split_each_tests_time_and_name_the_rest_checks():
    from rig.tools.bench.verdict import phase_totals
    took = {"s::a": 3.0, "s::b": 2.0}
    split = {"s::a": {"prepare": 0.2, "restore": 0.5, "guest": 1.5, "parse": 0.3},
             "s::b": {"prepare": 0.1, "restore": 0.5, "guest": 0.9}}
    totals = phase_totals(took, split)
    assert totals["guest"] == 2.4 and totals["host_wait"] == 0.0
    assert round(totals["checks"], 3) == round(3.0 - 2.5 + 2.0 - 1.5, 3)
    text = report.phase_table(totals)
    assert "| the guest's run | 2.4 | 48% |" in text
    assert "| the checks, and pytest itself | 1.0 | 20% |" in text


@pytest.mark.boots
def test_a_scenario_run_records_where_each_tests_time_went(tmp_path):
    """On real boots: every scenario test's JUnit record carries its time
    split, which the bench adds up."""
    from rig.tests.helpers import run_suite
    from rig.tools.junit import phase_times
    got, proc = run_suite(tmp_path, ["--flavor", "patched",
                                     "scenarios/test_s03_emergency_immediacy.py"])
    assert set(got.values()) == {"passed"}, proc.stdout[-3000:]
    split = phase_times(tmp_path / "junit.xml")
    assert set(split) == set(got)
    for test, phases in split.items():
        assert {"prepare", "host_wait", "qemu_start", "restore", "guest", "finish",
                "parse"} <= set(phases), (test, phases)
        assert phases["restore"] > 0 and phases["guest"] > 0 and phases["parse"] > 0, phases
