"""rig bench [--lines N] [--out FILE] [--check]: the printk figures of
rig.bench.guest on both flavors in one run, as a table and JSON; --check
exits 1 when the patched kernel breaks a promise of rig.bench.report.check."""
import datetime
import os
import platform
from pathlib import Path

from rig.bench import guest, report
from rig.build import artifacts


def main(lines: int, out: Path, do_check: bool) -> int:
    for flavor in ("vanilla", "patched"):
        artifacts.kernel(flavor, build=True)
        artifacts.initramfs(flavor, build=True)
    artifacts.qemu(build=True)
    figs = {f: guest.measure(f, lines) for f in ("vanilla", "patched")}
    meta = {"date": datetime.date.today().isoformat(), "machine": platform.node(),
            "cpus": os.cpu_count(), "backlog_lines": lines,
            "icount_shift": guest.ICOUNT_SHIFT,
            "units": "guest virtual time (-icount), ns unless said"}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report.to_json(figs["vanilla"], figs["patched"], meta))
    print(f"\nprintk bench, {meta['date']}, backlog {lines} lines, -icount shift "
          f"{guest.ICOUNT_SHIFT} (virtual time)\n")
    print(report.table(figs["vanilla"], figs["patched"]))
    print(f"JSON: {out}")
    problems = report.check(figs["vanilla"], figs["patched"])
    for p in problems:
        print(f"[bench] CHECK FAILED: {p}")
    if not problems:
        print("[bench] check: patched INFO p99 under the backlog at least "
              f"{report.P99_SPEEDUP_MIN}x lower than vanilla's, emergency line within "
              f"{report.EMERGENCY_RATIO_MAX}x of its wire time")
    return 1 if problems and do_check else 0
