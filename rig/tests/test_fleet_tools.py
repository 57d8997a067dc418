"""The rig's repeated runs on a fleet of test hosts (rig.fleet.netns_hosts):
`rig flakes`, `rig determinism`, `rig mutants` and ci/gate take the hosts
and spread their suites over them, with the verdicts they give on one
machine."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rig import paths
from rig.fleet import hosts, netns_hosts
from rig.tests.helpers import fleet_workdir

pytestmark = pytest.mark.boots

# Two scenario files on the icount clock: restores, golden transcripts.
SUBSET = ["scenarios/test_s03_emergency_immediacy.py", "scenarios/test_s07_nmi_mid_line.py"]


@pytest.fixture(scope="module")
def fleet_file(tmp_path_factory):
    work = fleet_workdir(tmp_path_factory)
    two = netns_hosts.start(2, work)
    path = work / "hosts.txt"
    # Test hosts share this machine's CPUs: its host lock, as a local boot.
    hosts.write(path, [hosts.FleetHost(h.name, h.uri, 1, "machine") for h in two])
    yield path
    netns_hosts.stop(two)


def rig(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, RIG_RUNS=str(tmp_path / "runs"))
    proc = subprocess.run([sys.executable, "-m", "rig", *args], cwd=paths.REPO, env=env,
                          capture_output=True, text=True)
    print(proc.stdout[-4000:], proc.stderr[-3000:])
    return proc


def hosts_used(runs: Path):
    return {json.loads(p.read_text()).get("host") for p in runs.rglob("summary.json")}


def test_flakes_spreads_its_runs_over_the_hosts(fleet_file, tmp_path):
    proc = rig(tmp_path, "flakes", "--runs", "2", "--", *SUBSET, "--flavor", "patched",
               "--hosts", str(fleet_file), "--keep-runs")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert hosts_used(tmp_path / "runs") == {"fleet-a", "fleet-b"}


def test_determinism_holds_across_the_hosts(fleet_file, tmp_path):
    # The same boots on either host, byte for byte, run after run.
    proc = rig(tmp_path, "determinism", "--runs", "2", "--", *SUBSET, "--flavor", "patched",
               "--hosts", str(fleet_file))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert hosts_used(tmp_path / "runs") == {"fleet-a", "fleet-b"}


@pytest.mark.builds
def test_a_mutant_is_caught_on_the_fleet(fleet_file, tmp_path):
    # One incremental kernel build from the patched flavor's (kept in the
    # cache for the next run), its scenario on the hosts.
    proc = rig(tmp_path, "mutants", "--only", "emergency-loglevel-param-ignored",
               "--keep-builds", "--", "scenarios/test_s15_emergency_loglevel.py",
               "--hosts", str(fleet_file), "--keep-runs")
    assert proc.returncode == 0, proc.stdout[-3000:]
    kills = json.loads((tmp_path / "runs" / "mutants" / "kills.json").read_text())
    (row,) = kills["mutants"]
    assert row["verdict"] == "caught"
    assert any("test_s15_boot_parameter_lowers_the_threshold" in t for t in row["caught_by"])
    assert hosts_used(tmp_path / "runs") <= {"fleet-a", "fleet-b"} and \
        hosts_used(tmp_path / "runs")


@pytest.mark.builds
def test_the_gate_judges_on_the_fleet(fleet_file, tmp_path):
    from rig.tests.kernel_tree import BASE_TAG, kernel_git_tree
    harmless = paths.REPO / "rig/tests/data/gate-harmless-comment.patch"
    proc = subprocess.run([str(paths.REPO / "ci/gate"), "--tree", str(kernel_git_tree()),
                           "--base", BASE_TAG, "--patch", str(harmless), "--out",
                           str(tmp_path / "gate"), "--hosts", str(fleet_file), "--",
                           "scenarios/test_s02_cpu_tagging.py", "--keep-runs"],
                          capture_output=True, text=True, cwd=paths.REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # Both sides' boot checks and suites ran on the hosts.
    for side in ("base", "head"):
        used = hosts_used(tmp_path / "gate" / f"{side}-runs")
        assert used and used <= {"fleet-a", "fleet-b"}, (side, used)
