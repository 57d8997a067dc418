"""A fleet of libvirt hosts (rig.fleet.hosts): hosts files, how workers take
the hosts' slots, and, on test hosts this file makes (rig.fleet.netns_hosts),
the scenario suite split over two hosts with the verdicts of a local run, and
a host that fails handing its boots to another, which says so."""
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rig import paths
from rig.fleet import hosts, netns_hosts
from rig.tests.helpers import fleet_workdir, run_suite

# The scenario that only the debug profile's tracer judges (skipped on the others).
DEBUG_ONLY = "test_s19_a_cpu_sync_owner_does_not_write_its_backtrace_with_interrupts_off"


def test_a_hosts_file_names_hosts_slots_and_locks():
    fleet = hosts.parse("# name uri options\n"
                        "lab-1  qemu+ssh://lab-1/system  slots=3\n"
                        "\n"
                        "lab-2  qemu+tls://lab-2.example/system  lock=machine  # ours\n")
    assert fleet == [hosts.FleetHost("lab-1", "qemu+ssh://lab-1/system", 3, "host"),
                     hosts.FleetHost("lab-2", "qemu+tls://lab-2.example/system", 1, "machine")]
    # Workers take slots round robin: lab-1, lab-2, lab-1, lab-1, then again.
    assert [hosts.for_worker(fleet, i).name for i in range(6)] == \
        ["lab-1", "lab-2", "lab-1", "lab-1", "lab-1", "lab-2"]
    # A host that failed is passed over; with none left, no host.
    assert hosts.for_worker(fleet, 1, {"lab-2"}).name == "lab-1"
    assert hosts.for_worker(fleet, 0, {"lab-1", "lab-2"}) is None


@pytest.mark.parametrize("text,problem", [
    ("lab-1\n", "line 1: want `NAME URI"),
    ("lab-1 lab-1.example\n", "is not a libvirt URI"),
    ("lab-1 qemu+ssh://a/system slots=none\n", "slots=none: want a whole number"),
    ("lab-1 qemu+ssh://a/system speed=2\n", "unknown option 'speed=2'"),
    ("a qemu+ssh://a/system\na qemu+ssh://b/system\n", "line 2: a second host named a"),
    ("# nothing\n", "no hosts in it"),
])
def test_a_bad_hosts_file_is_named_with_its_line(text, problem):
    with pytest.raises(hosts.HostsError, match=problem.replace("(", r"\(")):
        hosts.parse(text)


# A hosts file is shared between people and CI jobs, and the rig runs as root.
@pytest.mark.parametrize("uri,problem", [
    ("qemu+ssh://localhost/system?command=/tmp/evil.sh",
     "parameter command= runs that program instead of ssh"),
    ("qemu+ssh://lab/system?socket=/x", "parameter socket= goes into the command line"),
    # libvirt also splits parameters at ';': allow=keyfile must not let command= in.
    ("qemu+ssh://lab/system?keyfile=/k;command=/tmp/x", "';' in the query"),
    ("qemu+ssh://lab/system?no_verify=1%3Bcommand%3D%2Fx", "not a plain value"),
    ("qemu+ssh://lab/system?netcat=evil", "parameter netcat= names the program"),
    ("qemu+ssh://lab/system?keyfile=/root/.ssh/id_rsa", "keyfile= makes ssh read"),
    ("qemu+tls://lab/system?pkipath=/etc", "pkipath= reads TLS keys"),
    ("qemu+ssh://lab/system?known_hosts=/etc/passwd", "known_hosts= names a file libvirt "
                                                       "writes"),
    ("qemu+ext:///system?command=/bin/sh", "transport 'qemu+ext' is not one the rig uses"),
    ("qemu+ssh://-oProxyCommand=id/system", "host '-oproxycommand=id' is not a host name"),
    ("qemu+ssh://-l@lab/system", "user '-l' is not a user name"),
    ("qemu+ssh://lab/system?frobnicate=1", "frobnicate= is not a libvirt URI parameter"),
    ("qemu+ssh://lab/etc/passwd", "path '/etc/passwd'"),
    ("qemu+unix:///system?socket=/tmp/s", "parameter socket="),
])
def test_a_hosts_line_that_could_run_a_command_or_name_a_file_is_refused(uri, problem):
    with pytest.raises(hosts.HostsError, match=r"line 2: .*" + re.escape(problem)):
        hosts.parse(f"ok qemu+ssh://ok/system\nbad {uri}\n")
    with pytest.raises(hosts.HostsError, match=r"--libvirt-uri"):
        hosts.from_uris([uri])


def test_a_hosts_line_may_allow_a_guarded_parameter_by_name():
    fleet = hosts.parse("lab qemu+ssh://ci@lab:2222/system?keyfile=/k&no_tty=1 allow=keyfile\n")
    assert fleet[0].allow == ("keyfile",)
    with pytest.raises(hosts.HostsError, match="line 1: .*command="):
        hosts.parse("lab qemu+ssh://lab/system?keyfile=/k&command=/x allow=keyfile\n")
    with pytest.raises(hosts.HostsError, match="line 1: .*';' in the query"):
        hosts.parse("lab qemu+ssh://lab/system?keyfile=/k;command=/x allow=keyfile\n")
    with pytest.raises(hosts.HostsError, match="allow=password: only command, socket"):
        hosts.parse("lab qemu+ssh://lab/system allow=password\n")


def test_uris_on_the_command_line_are_hosts_named_after_them():
    fleet = hosts.from_uris(["qemu+tcp://10.0.0.2/system", "qemu+ssh://root@lab/system"], 2)
    assert [(h.name, h.slots) for h in fleet] == [("10.0.0.2", 2), ("lab", 2)]


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory):
    return fleet_workdir(tmp_path_factory)


def hosts_file(path: Path, test_hosts) -> Path:
    # Test hosts share this machine's CPUs: its host lock, as a local boot.
    hosts.write(path, [hosts.FleetHost(h.name, h.uri, 1, "machine") for h in test_hosts])
    return path


def properties(junit: Path, name: str):
    return {f"{c.get('classname')}::{c.get('name')}": p.get("value")
            for c in ET.parse(junit).getroot().iter("testcase")
            for p in c.iter("property") if p.get("name") == name}


@pytest.mark.boots
def test_the_scenario_suite_split_over_two_hosts_gives_a_local_runs_verdicts(fleet_dir,
                                                                            tmp_path):
    two = netns_hosts.start(2, fleet_dir / "suite")
    try:
        got, proc = run_suite(tmp_path, ["-n", "2", "--hosts",
                                         str(hosts_file(tmp_path / "hosts", two)), "scenarios"])
    finally:
        netns_hosts.stop(two)
    # Every scenario passes, the vanilla kernel's strict expected failures
    # fail as they must, and every golden boot matched its golden file: the
    # verdicts of a local run. A test of the debug profile only is skipped
    # on this one, as it is locally.
    skipped = {t for t, v in got.items() if v == "skipped"}
    assert skipped == {t for t in got if DEBUG_ONLY in t}, skipped
    assert got and set(got.values()) <= {"passed", "xfailed", "skipped"}, \
        {t: v for t, v in got.items() if v not in ("passed", "xfailed", "skipped")}
    assert len(got) >= 100
    summaries = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/summary.json")]
    assert {s.get("host") for s in summaries} == {h.name for h in two}
    assert not any("rerun_of" in s for s in summaries)


@pytest.mark.boots
def test_a_host_with_a_full_pool_hands_its_boots_to_the_other(fleet_dir, tmp_path):
    # fleet-full cannot take the rig's QEMU: every boot its worker starts
    # there fails on the upload and runs once more on fleet-ok.
    full, ok = (netns_hosts.start(1, fleet_dir / "full", pool_mib=24, names=["fleet-full"])
                + netns_hosts.start(1, fleet_dir / "ok", names=["fleet-ok"]))
    try:
        got, proc = run_suite(tmp_path, ["-n", "2", "--hosts",
                                         str(hosts_file(tmp_path / "hosts", [full, ok])),
                                         "--flavor", "patched",
                                         "scenarios/test_s03_emergency_immediacy.py",
                                         "scenarios/test_s07_nmi_mid_line.py"])
    finally:
        netns_hosts.stop([full, ok])
    assert got and set(got.values()) == {"passed"}, proc.stdout[-4000:]
    reruns = properties(tmp_path / "junit.xml", "rerun_elsewhere")
    assert reruns, "no test says it ran again elsewhere"
    for test, why in reruns.items():
        assert why.startswith("host fleet-full (") and "uploading" in why, (test, why)
        assert why.endswith("ran again on host fleet-ok"), (test, why)
    summaries = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/summary.json")]
    assert {s["host"] for s in summaries} == {"fleet-ok"}


@pytest.mark.boots
def test_a_boot_whose_host_dies_runs_again_on_another(fleet_dir, tmp_path):
    doomed, spare = netns_hosts.start(2, fleet_dir / "dies", names=["fleet-doomed",
                                                                    "fleet-spare"])
    env = dict(os.environ, RIG_RUNS=str(tmp_path / "runs"))
    # Not an xdist worker (this test may run in one): the boot takes the
    # first host. Init sleeps 3 s of guest time.
    env.pop("PYTEST_XDIST_WORKER", None)
    harness = subprocess.Popen(
        [sys.executable, "-m", "rig", "boot", "--hosts",
         str(hosts_file(tmp_path / "hosts", [doomed, spare])), "--flavor", "patched",
         "--name", "host-dies", "--clock", "icount", "--snapshot", "off",
         "--cmdline", "rig.steps=kmsg,sleep rig.sleep_ms=3000"],
        cwd=paths.REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        seen = b""
        for line in iter(harness.stdout.readline, b""):
            seen += line
            if b"rig-init: step sleep" in line:
                netns_hosts.kill_libvirtd(doomed)
                break
        out, err = harness.communicate(timeout=180)
        out = (seen + out).decode(errors="replace")
        assert harness.returncode == 0, out[-3000:] + err.decode()[-3000:]
        assert f"[boot] host fleet-doomed ({doomed.uri}): lost during run" in out, out[-3000:]
        assert "[boot] running host-dies once more on host fleet-spare" in out
        (rerun,) = [json.loads(p.read_text()) for p in
                    (tmp_path / "runs").glob("*/summary.json") if "rerun_of" in
                    json.loads(p.read_text())]
        assert rerun["host"] == "fleet-spare" and rerun["rerun_of"]["failed_host"] == \
            "fleet-doomed"
        assert doomed.pids() == [], "the dead host left processes"
        assert spare.qemu_pids() == []
    finally:
        if harness.poll() is None:
            harness.kill()
        netns_hosts.stop([doomed, spare])


def test_the_bench_adds_up_what_the_boots_sent_and_renders_it(tmp_path):
    from rig.tools.bench import fleet
    for i, (sent, reused) in enumerate([(100 << 20, 0), (0, 50 << 20)]):
        run = tmp_path / f"run{i}"
        run.mkdir()
        (run / "transfer.json").write_text(json.dumps(
            {"bytes_uploaded": sent, "bytes_reused": reused, "bytes_fetched": 1 << 20,
             "upload_s": 0.5, "fetch_s": 0.01}))
    totals = fleet.transfer_totals(tmp_path)
    assert totals == {"boots": 2, "bytes_uploaded": 100 << 20, "bytes_reused": 50 << 20,
                      "bytes_fetched": 2 << 20, "upload_s": 1.0, "fetch_s": 0.02}
    text = fleet.table({"suite": "scenarios", "runs": [
        dict(totals, hosts=1, run="first", wall_s=200.4, tests=120, not_passed=[])]})
    assert "| 1 | first | 200 s | 120 | 0 | 2 | 100 MiB | 50 MiB | 1.0 s | 2 MiB |" in text
