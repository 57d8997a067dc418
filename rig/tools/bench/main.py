"""rig bench [--lines N] [--stress-records N] [--verdict-runs N] [--out FILE]
[--check]: the printk figures of rig.tools.bench.guest on both flavors in one run,
the rig's own time to verdict (rig.tools.bench.verdict) and rig diff's speed
(rig.tools.bench.diff), as tables and JSON; --check exits 1 when the patched kernel
breaks a promise of rig.tools.bench.report.check or rig diff misses its target."""
import datetime
import os
import platform
from pathlib import Path

from rig.artifacts import built as artifacts
from rig.tools.bench import diff, guest, report, verdict


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
         verdict_workers: int = 0) -> int:
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
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report.to_json(figs["vanilla"], figs["patched"], meta, times, diffs))
    print(f"\nprintk bench, {meta['date']}, {meta['machine']}, backlog {lines} lines, "
          f"-icount shift {guest.ICOUNT_SHIFT} (virtual time)\n")
    print(report.table(figs["vanilla"], figs["patched"]))
    print(report.stress_table(figs["vanilla"], figs["patched"]))
    if times:
        print(report.verdict_table(times))
    print(diff.table(diffs))
    print(f"JSON: {out}")
    problems = report.check(figs["vanilla"], figs["patched"]) + diff.check(diffs)
    for p in problems:
        print(f"[bench] CHECK FAILED: {p}")
    if not problems:
        print("[bench] check: patched INFO p99 under the backlog at least "
              f"{report.P99_SPEEDUP_MIN}x lower than vanilla's, emergency line within "
              f"{report.EMERGENCY_RATIO_MAX}x of its wire time, rig diff of two different "
              f"500 KB boots under {diff.TARGET_S} s")
    return 1 if problems and do_check else 0
