"""The scenario suite on test hosts of this machine (rig.fleet.netns_hosts):
on one host and on two (one slot each), each twice on the same fresh hosts:
the first run sends every input through libvirt, the second reuses what
the hosts hold. Wall times are the host's; the transfer figures add up the
runs' transfer.json files (rig.vm.machine_remote). All the hosts share this
machine's CPUs: the figures show what spreading costs and gains, not what
more machines would."""
import json
import shutil
import time
from pathlib import Path
from typing import Dict, List

from rig import config, pytest_run
from rig.fleet import hosts, netns_hosts
from rig.tools.junit import verdicts

SUITE = ["scenarios"]


def transfer_totals(runs: Path) -> Dict:
    sent = fetched = reused = 0
    upload_s = fetch_s = 0.0
    boots = 0
    for t in runs.glob("*/transfer.json"):
        data = json.loads(t.read_text())
        boots += 1
        sent += data["bytes_uploaded"]
        reused += data["bytes_reused"]
        fetched += data["bytes_fetched"]
        upload_s += data["upload_s"]
        fetch_s += data["fetch_s"]
    return {"boots": boots, "bytes_uploaded": sent, "bytes_reused": reused,
            "bytes_fetched": fetched, "upload_s": round(upload_s, 2),
            "fetch_s": round(fetch_s, 2)}


def suite_on(fleet_file: Path, out: Path, label: str, suite: List[str]) -> Dict:
    junit = out / f"{label}.junit.xml"
    runs = out / f"{label}-runs"
    # Only this suite's runs count: not an earlier bench's.
    shutil.rmtree(runs, ignore_errors=True)
    junit.unlink(missing_ok=True)
    print(f"[bench] fleet: {label}: pytest {' '.join(suite)} --hosts {fleet_file}", flush=True)
    start = time.monotonic()
    pytest_run.run(suite + ["--hosts", str(fleet_file), "--keep-runs"], junit,
                   env=config.environ(runs_root=str(runs)))
    wall = time.monotonic() - start
    got = verdicts(junit) if junit.is_file() else {}
    bad = sorted(t for t, v in got.items() if v not in ("passed", "xfailed"))
    return {"label": label, "wall_s": round(wall, 1), "tests": len(got),
            "not_passed": bad, **transfer_totals(runs)}


def measure(out: Path, suite: List[str] = SUITE) -> Dict:
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for count in (1, 2):
        test_hosts = netns_hosts.start(count, out / f"hosts-{count}")
        try:
            fleet_file = out / f"hosts-{count}.txt"
            hosts.write(fleet_file, [hosts.FleetHost(h.name, h.uri, 1, "machine")
                                     for h in test_hosts])
            for run in ("first", "second"):
                results.append(dict(suite_on(fleet_file, out, f"{count}-host-{run}", suite),
                                    hosts=count, run=run))
        finally:
            netns_hosts.stop(test_hosts)
    return {"suite": " ".join(suite), "runs": results}


def table(fleet: Dict) -> str:
    rows = ["| hosts (1 slot each) | run | wall | tests | not passed | boots | sent | "
            "reused | sending | fetched |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in fleet["runs"]:
        rows.append(f"| {r['hosts']} | {r['run']} | {r['wall_s']:.0f} s | {r['tests']} | "
                    f"{len(r['not_passed'])} | {r['boots']} | "
                    f"{r['bytes_uploaded'] / 2**20:.0f} MiB | {r['bytes_reused'] / 2**20:.0f} MiB | "
                    f"{r['upload_s']:.1f} s | {r['bytes_fetched'] / 2**20:.0f} MiB |")
    return ("The scenario suite (`" + fleet["suite"] + "`) with `--hosts` on test hosts "
            "of this machine (network, mount and pid namespaces, a libvirtd each; "
            "docs/fleet.md), each suite twice on the same fresh hosts: the first run "
            "sends the inputs, the second reuses them (on two hosts, a test may land on "
            "the host that did not get its snapshot template the first time: xdist "
            "hands tests to the workers as they come free). sent and reused: input bytes "
            "of all boots (QEMU and firmware, kernels, initramfs, state images); "
            "sending: the seconds the boots spent uploading and checking them; "
            "fetched: evidence downloaded. The hosts share this machine's 2 cores.\n\n"
            + "\n".join(rows) + "\n")
