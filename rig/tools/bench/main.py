"""rig bench [--lines N] [--stress-records N] [--verdict-runs N] [--out FILE]
[--page DIR] [--from FILE] [--check] [--command CMD [--cold]]: the printk figures of
rig.tools.bench.guest on both flavors in one run, the rig's own time to verdict
(rig.tools.bench.verdict), rig diff's speed (rig.tools.bench.diff), what
checking the cached inputs costs (rig.tools.bench.inputs) and the readers'
time and memory on 1 GB logs (rig.tools.bench.biglog), as JSON
and the measurements page rendered from it (rig.tools.bench.page); --check
exits 1 when the patched kernel breaks a promise of
rig.tools.bench.report.check or rig diff misses its target. --command
measures a user's command instead (rig.tools.bench.commands) and adds it to
the day's JSON and page."""
import datetime
import json
import os
import platform
from pathlib import Path
from typing import Optional

from rig.artifacts import built as artifacts
from rig.tools.bench import biglog, commands, diff, fleet, guest, inputs, page, report, verdict

# The long-log case: every reader on logs of this size (rig.tools.bench.biglog).
LONG_LOG_BYTES = 1 << 30


def machine_name() -> str:
    """The CPU model and core count: what the wall-time figures depend on."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    kvm = "KVM" if Path("/dev/kvm").exists() else "no KVM"
    return f"{platform.node()}: {os.cpu_count()} x {model}, {kvm}"


def main(lines: int, out: Path, do_check: bool, stress_records: int, verdict_runs: int,
         verdict_workers: int = 0, page_dir: Optional[Path] = None) -> int:
    for flavor in ("vanilla", "patched"):
        artifacts.kernel(flavor, build=True)
        artifacts.initramfs(flavor, build=True)
    artifacts.qemu(build=True)
    figs = {f: guest.measure(f, lines, stress_records) for f in ("vanilla", "patched")}
    times = (verdict.measure(verdict_runs, out.parent / "bench-verdict", verdict_workers)
             if verdict_runs else {})
    meta = {"date": datetime.date.today().isoformat(), "machine": machine_name(),
            "cpus": os.cpu_count(), "backlog_lines": lines,
            "icount_shift": guest.ICOUNT_SHIFT, "stress_records": stress_records,
            "stress_vcpus": guest.STRESS_SMP,
            "units": "printk and ringbuffer figures: guest virtual time (-icount), ns unless "
                     "said; time to verdict: host wall seconds"}
    diffs = diff.measure()
    extra = {"input_checks": inputs.measure(),
             "long_logs": biglog.measure_all(LONG_LOG_BYTES, out.parent / "bench-long-logs")}
    out.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(report.to_json(figs["vanilla"], figs["patched"], meta, times, diffs))
    out.write_text(json.dumps(dict(data, **extra), indent=2) + "\n")
    print(f"JSON: {out}")
    return show(out, page_dir, do_check)


def todays(out: Path, page_dir: Optional[Path]) -> "tuple[Path, dict]":
    """Today's bench JSON (page_dir's, else out) and what it holds."""
    today = datetime.date.today().isoformat()
    target = page_dir / f"{today}.json" if page_dir is not None else out
    data = json.loads(target.read_text()) if target.exists() else {}
    if data.get("meta", {}).get("date") != today:
        data = {"meta": {"date": today, "machine": machine_name(), "cpus": os.cpu_count()}}
    target.parent.mkdir(parents=True, exist_ok=True)
    return target, data


def command(cmd: str, cold: bool, out: Path, page_dir: Optional[Path]) -> int:
    """Measure one command (rig.tools.bench.commands) into today's bench
    JSON, and show its page; 1 if the command failed."""
    result = dict(commands.measure(cmd, cold), machine=machine_name())
    target, data = todays(out, page_dir)
    target.write_text(json.dumps(commands.merge(data, result), indent=2) + "\n")
    print(f"JSON: {target}")
    show(target, page_dir, False)
    return 0 if result["exit_status"] == 0 else 1


def fleet_suite(out: Path, page_dir: Optional[Path]) -> int:
    """The scenario suite on one test host and on two (rig.tools.bench.fleet)
    into today's bench JSON; 1 if a test did not pass."""
    artifacts.qemu(build=True)
    for flavor in ("vanilla", "patched"):
        artifacts.kernel(flavor, build=True)
        artifacts.initramfs(flavor, build=True)
    result = dict(fleet.measure(out.parent / "bench-fleet"), machine=machine_name())
    target, data = todays(out, page_dir)
    data["fleet"] = result
    target.write_text(json.dumps(data, indent=2) + "\n")
    print(f"JSON: {target}")
    show(target, page_dir, False)
    return 1 if any(r["not_passed"] or not r["tests"] for r in result["runs"]) else 0


def long_logs(out: Path, page_dir: Optional[Path], do_check: bool) -> int:
    """Only the readers on 1 GB logs and the cost of checking the cached
    inputs, into today's bench JSON (the rest of `rig bench` takes an hour)."""
    for flavor in ("vanilla", "patched"):
        artifacts.kernel(flavor, build=True)
        artifacts.initramfs(flavor, build=True)
    artifacts.qemu(build=True)
    target, data = todays(out, page_dir)
    data["input_checks"] = inputs.measure()
    data["long_logs"] = dict(biglog.measure_all(LONG_LOG_BYTES, out.parent / "bench-long-logs"),
                             machine=machine_name())
    target.write_text(json.dumps(data, indent=2) + "\n")
    print(f"JSON: {target}")
    return show(target, page_dir, do_check)


def show(json_file: Path, page_dir: Optional[Path], do_check: bool) -> int:
    """Print the measurements page of a bench JSON file, and write it to
    page_dir/DATE.md if asked; 1 when --check and a promise is broken."""
    data = json.loads(json_file.read_text())
    print("\n" + page.render(data, str(json_file)))
    if page_dir is not None:
        print(f"page: {page.write(data, page_dir)}")
    return 1 if page.problems(data) and do_check else 0
