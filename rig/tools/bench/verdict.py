"""The rig's own time to verdict, in host wall time (what a developer waits
for; the printk figures are in guest virtual time, these cannot be):

- QEMU start to guest init: the harness's phase clock (QEMU spawned, the
  firmware, the kernel, up to "rig-init: start") over BOOTS plain boots per
  flavor, median;
- wall time per scenario: the scenario suite run RUNS times as `make test`
  runs it (pytest-xdist workers), each test's median wall time (setup, call,
  teardown, so a boot shared by a module's tests counts once), and the median
  over all scenario tests;
- the scenario suite's own wall time, median of those runs (warm: every
  build comes from the cache);
- where the scenario tests' time goes, per phase (rig.boot.time_split, the
  evidence parsing, and the checks and pytest as the rest), summed over
  the tests, median of the runs.
The whole `make test`, cold and warm, is measured by running it (docs/measurements/).
"""
import os
import statistics
from pathlib import Path
from typing import Dict, List

from rig.boot import BootRequest, boot, time_split
from rig.tools.bench.guest import BenchError
from rig.tools.flakes import run_suite
from rig.tools.junit import median_times, phase_times

BOOTS = 5
TO_INIT = ("qemu", "firmware", "kernel")     # the phases before "rig-init: start"


def boot_to_init(flavor: str, boots: int = BOOTS) -> Dict[str, float]:
    walls = []
    for i in range(boots):
        res = boot(BootRequest(flavor=flavor, name="bench-boot"))
        if res.outcome.cls != "clean":
            raise BenchError(f"boot {i + 1} of {flavor}: {res.outcome.cls}: "
                               f"{res.outcome.detail} (run directory {res.run_dir})")
        walls.append(sum(p.wall_s for p in res.phases if p.name in TO_INIT))
    return {"boots": boots, "median_s": round(statistics.median(walls), 3),
            "min_s": round(min(walls), 3), "max_s": round(max(walls), 3)}


def scenario_walls(runs: int, out_dir: Path, workers: int) -> Dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    times: List[Dict[str, float]] = []
    phases: List[Dict[str, float]] = []
    suite: List[float] = []
    failed: Dict[str, str] = {}
    for i in range(1, runs + 1):
        print(f"[bench] time to verdict: scenario suite, run {i}/{runs} "
              f"({workers} workers)", flush=True)
        junit = out_dir / f"verdict-{i}.xml"
        verdicts, took, wall = run_suite(junit, ["scenarios", "-n", str(workers)])
        phases.append(phase_totals(took, phase_times(junit)))
        failed.update({t: v for t, v in verdicts.items() if v not in ("passed", "xfailed")})
        times.append(took)
        suite.append(wall)
    medians = median_times(times)
    return {"runs": runs, "workers": workers, "tests": len(medians),
            "median_per_test_s": round(statistics.median(medians.values()), 3),
            "suite_median_s": round(statistics.median(suite), 1),
            "suite_runs_s": [round(w, 1) for w in suite],
            "per_test_median_s": {t: round(s, 3) for t, s in sorted(medians.items())},
            "phase_total_s": {p: round(statistics.median(r[p] for r in phases), 1)
                              for p in phases[0]},
            "not_passed": failed}


# A boot's phases (rig.boot.time_split), then the scenario fixtures' parsing.
PHASES = tuple(time_split(0.0, 0.0, [], 0.0)) + ("parse",)


def phase_totals(took: Dict[str, float], split: Dict[str, Dict[str, float]]) -> Dict[str, float]:
    """Seconds of test wall time per phase, summed over the scenario tests;
    "checks" is the rest of each test's time (its assertions, pytest)."""
    totals = {p: sum(split.get(t, {}).get(p, 0.0) for t in took) for p in PHASES}
    totals["checks"] = sum(max(0.0, s - sum(split.get(t, {}).values()))
                           for t, s in took.items())
    return totals


def measure(runs: int, out_dir: Path, workers: int = 0) -> Dict:
    workers = workers or os.cpu_count() or 1
    out = {}
    for flavor in ("vanilla", "patched"):
        print(f"[bench] time to verdict: {BOOTS} boots of {flavor}, QEMU start to init",
              flush=True)
        out[f"boot_to_init_{flavor}"] = boot_to_init(flavor)
    out["scenarios"] = scenario_walls(runs, out_dir, workers)
    return out
