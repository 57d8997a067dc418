"""rig bench's table, JSON and check, on figures measured by a real bench
run (1200-line backlog, 2026-12-04); the boots themselves run in make bench."""
import json

from rig.bench import report
from rig.bench.guest import FlavorFigures

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
