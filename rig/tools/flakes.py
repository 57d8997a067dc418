"""Run the scenarios N times in a row and compare the verdicts test by test:
a scenario that does not give the same verdict every time is a flake, and a
flake is a bug of the rig (or of the kernel) to be fixed, not retried."""
import json
import time
from pathlib import Path
from typing import Dict, List, Tuple

from rig import pytest_run
from rig.tools.junit import median_times, verdicts, wall_times


def disagreements(runs: List[Dict[str, str]]) -> Dict[str, List[str]]:
    """Tests whose verdict is not the same in every run (missing counts as 'absent')."""
    ids = sorted(set().union(*runs)) if runs else []
    out = {}
    for test_id in ids:
        seen = [run.get(test_id, "absent") for run in runs]
        if len(set(seen)) > 1:
            out[test_id] = seen
    return out


def run_suite(junit: Path, pytest_args: List[str]) -> Tuple[Dict[str, str], Dict[str, float],
                                                             float]:
    """One pytest run: its verdicts and wall times per test, and its own wall time."""
    start = time.monotonic()
    pytest_run.run_judged(pytest_args, junit)
    wall = time.monotonic() - start
    return verdicts(junit), wall_times(junit), wall


def main(runs: int, out_dir: Path, pytest_args: List[str]) -> int:
    out_dir.mkdir(parents=True, exist_ok=True)
    results, times = [], []
    for i in range(1, runs + 1):
        print(f"[flakes] run {i}/{runs}: pytest {' '.join(pytest_args)}", flush=True)
        result, took, _ = run_suite(out_dir / f"flakes-{i}.xml", pytest_args)
        results.append(result)
        times.append(took)
    medians = median_times(times)
    (out_dir / "median-times.json").write_text(json.dumps(medians, indent=1) + "\n")
    print(f"[flakes] median wall time per test over {runs} runs (s), slowest first:")
    for test_id, t in sorted(medians.items(), key=lambda kv: -kv[1]):
        print(f"  {t:7.2f}  {test_id}")
    bad = disagreements(results)
    for test_id, seen in bad.items():
        print(f"[flakes] FLAKY {test_id}: {' '.join(seen)}")
    total = len(set().union(*results))
    print(f"[flakes] {total} tests, {runs} runs: "
          f"{'same verdict every time' if not bad else f'{len(bad)} flaky'}")
    return 1 if bad else 0
