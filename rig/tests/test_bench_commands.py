"""rig bench --command: a real command in a real fresh clone of HEAD, with
the cache warm or empty, its wall time and exit status on the page; the step
times of a cold run come from the build cache's manifests (read here from
this machine's own cache, written by real builds)."""
import json
import subprocess
import sys

import pytest

from rig import paths
from rig.tools.bench import commands, page


@pytest.fixture(autouse=True)
def runs_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("RIG_RUNS", str(tmp_path / "runs"))


def test_a_command_runs_in_a_fresh_clone_of_head(tmp_path, monkeypatch):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(commands, "SCRATCH", str(scratch))
    got = commands.measure("git status --porcelain | wc -l; test -f Makefile && echo made; "
                           "stat -c %a ..", cold=False)
    assert got["exit_status"] == 0 and got["steps"] == {}
    assert got["cache"] == commands.cache_state(paths.cache_root())
    assert got["commit"] == commands.head_commit()
    log = open(got["log"]).read().split()
    assert log[:2] == ["0", "made"], "not a clean clone, or not the repository's"
    assert log[2] == "755", "other users cannot read the clone, as a test does"
    assert not list(scratch.iterdir()), "the clone outlived the measurement"


def test_a_cold_command_gets_an_empty_cache_and_a_failure_is_on_the_page():
    got = commands.measure("ls -A \"$RIG_CACHE\" | wc -l; "
                           "/usr/bin/python3 -c 'from rig import paths; print(paths.cache_root())'"
                           "; exit 3", cold=True)
    count, cache = open(got["log"]).read().split()
    assert count == "0" and cache.startswith(commands.SCRATCH) and cache.endswith("/cache")
    assert got["exit_status"] == 3 and got["cache"] == "cold"
    data = commands.merge({"meta": {"date": "2026-12-06", "machine": "m"}}, got)
    text = page.render(data, "x.json")
    assert "| cold |" in text and "FAILED (exit 3)" in text
    assert "printk, vanilla and patched" not in text, "no printk figures were measured"


def test_step_times_come_from_real_manifests():
    steps = commands.build_steps(paths.cache_root())
    if "qemu" not in steps:
        pytest.skip("this machine's cache has no QEMU build yet")
    assert steps["qemu"]["builds"] >= 1 and steps["qemu"]["seconds"] > 60
    result = {"command": "make demo", "cache": "cold", "commit": "0" * 40, "date": "d",
              "wall_s": 878.4, "exit_status": 0, "log": "l",
              "steps": {"qemu": steps["qemu"], "kernel-patched": {"builds": 1, "seconds": 524.0}}}
    text = commands.table([result])
    assert "| `make demo` | cold | 000000000000 |  | 14 min 38.4 s | ok |" in text
    assert "| m2: 2 x cpu | 14 min" in commands.table([dict(result, machine="m2: 2 x cpu")])
    assert text.index("| kernel-patched |") < text.index("| qemu |"), "longest step first"
    again = commands.merge(commands.merge({}, result), dict(result, wall_s=1.0))
    assert [c["wall_s"] for c in again["commands"]] == [1.0], "a new measurement replaces one"


def test_the_cli_adds_the_command_to_the_days_page(tmp_path):
    out = subprocess.run([sys.executable, "-m", "rig", "bench", "--command", "true",
                          "--page", str(tmp_path)], cwd=paths.REPO, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    (kept,) = tmp_path.glob("*.json")
    data = json.loads(kept.read_text())
    assert [c["command"] for c in data["commands"]] == ["true"]
    assert "| `true` | warm |" in kept.with_suffix(".md").read_text()
    assert data["commands"][0]["machine"] == data["meta"]["machine"], "measured here"


def test_a_bench_run_keeps_the_days_commands(tmp_path):
    day = {"meta": {"date": "2026-12-06", "machine": "m"}}
    result = {"command": "make demo", "cache": "warm", "commit": "1" * 40, "date": "d",
              "wall_s": 7.0, "exit_status": 0, "log": "l", "steps": {}}
    page.write(commands.merge(day, result), tmp_path)
    page.write(dict(day, rig_diff={}), tmp_path)         # a later bench of the same day
    kept = json.loads((tmp_path / "2026-12-06.json").read_text())
    assert kept["commands"] == [result]
    assert "| `make demo` | warm |" in (tmp_path / "2026-12-06.md").read_text()


def test_an_empty_cache_is_named_and_the_builds_and_packages_of_the_run_are_its_steps(
        tmp_path, monkeypatch):
    """A warm measurement on a machine that never built: the cache is called
    empty, and what the command built there (a real cache step) and the
    packages install-deps.sh installed are its steps."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("RIG_CACHE", str(cache))
    assert commands.cache_state(cache) == "empty"
    got = commands.measure(
        "echo '[deps] installed 3 packages in 41 s'; /usr/bin/python3 -c '"
        "from rig.artifacts.cache import Step, ensure; "
        "ensure(Step(\"bench-probe\", {\"x\": \"1\"}), lambda out: {})'", cold=False)
    assert got["exit_status"] == 0, open(got["log"]).read()
    assert got["cache"] == "empty"
    assert got["steps"]["deps"] == {"builds": 3, "seconds": 41.0}
    assert got["steps"]["bench-probe"]["builds"] == 1
    again = commands.measure("true", cold=False)
    assert again["cache"] == "warm" and again["steps"] == {}, "nothing was built the second time"
    assert "with a empty cache" not in commands.table([got]) and \
        "with an empty cache" in commands.table([got])


def test_each_profiles_suite_is_read_from_the_junit_file_pytest_wrote(tmp_path):
    runs = tmp_path / "clone-runs"
    for junit, extra in ((runs / "junit.xml", []),
                         (runs / "profile-rt" / "junit.xml", ["--smoke-flavor", "vanilla"]),
                         (runs / "profile-debug" / "junit.xml", ["--flavor", "patched"])):
        junit.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "rig/tests/test_profiles.py", "-k", "golden_files or unknown_or_missing",
                        f"--junitxml={junit}", *extra], cwd=paths.REPO, check=True,
                       capture_output=True)
    (runs / "profile-other").mkdir()
    (runs / "profile-other" / "junit.xml").write_text("<testsuites><testsu")   # cut short
    found = commands.suites(runs)
    assert sorted(found) == ["debug", "default", "rt"]
    assert found["debug"]["flavors"] == ["patched"] and found["rt"]["flavors"] == []
    assert found["default"]["tests"] == 2 and found["default"]["failures"] == 0
    assert found["default"]["smoke_only"] == [] and found["rt"]["smoke_only"] == ["vanilla"]
    page_text = commands.suite_table({"command": "bash .ci/run", "cache": "cold",
                                      "suites": found})
    assert "| rt | 2 | 0 | 0 |" in page_text and "vanilla: S1 and the golden scenarios" in page_text
    assert "| patched |" in page_text
