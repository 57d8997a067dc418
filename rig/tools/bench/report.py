"""The bench's table (Markdown, vanilla and patched side by side), its JSON,
and the benchmark check: the seed design's two promises as numbers."""
import dataclasses
import json
from typing import Dict, List, Optional

from rig.tools.bench.guest import FlavorFigures

P99_SPEEDUP_MIN = 100       # patched INFO p99 under the backlog, at least 100x lower
EMERGENCY_RATIO_MAX = 1.1   # patched emergency line within 1.1x of its wire time


def us(ns) -> str:
    return f"{ns / 1000:,.1f} us"


def rows(v: FlavorFigures, p: FlavorFigures) -> List[List[str]]:
    out = []
    for label, key in (("idle console", "info_idle"), ("backlog", "info_backlog")):
        for q in ("p50", "p99", "p999", "max"):
            a, b = getattr(v, key)[q], getattr(p, key)[q]
            out.append([f"INFO printk() {q.replace('p999', 'p99.9')}, {label}", us(a), us(b),
                        f"{a / b:,.0f}x lower" if b else "-"])
    ve, pe = v.emergency, p.emergency
    out.append(["emergency line: call to last bit on the wire", us(ve["ns"]), us(pe["ns"]),
                "-"])
    out.append(["... against its own wire time (physical limit)", f"{ve['ratio']:.3f}x",
                f"{pe['ratio']:.3f}x", "-"])
    vt, pt = v.throughput, p.throughput
    out.append(["console throughput (bytes per virtual s)", f"{vt['bytes_per_s']:,.0f}",
                f"{pt['bytes_per_s']:,.0f}", f"limit {pt['limit_bytes_per_s']:,.0f}"])
    out.append(["... against the baud limit", f"{vt['ratio']:.3f}", f"{pt['ratio']:.3f}", "-"])
    return out


def table(v: FlavorFigures, p: FlavorFigures) -> str:
    lines = ["| figure | vanilla | patched | patched vs vanilla |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows(v, p)]
    return "\n".join(lines) + "\n"


def stress_table(v: FlavorFigures, p: FlavorFigures) -> str:
    """The seed's ringbuffer table: per writer count, records per virtual
    second and the share of them each of the two readers saw."""
    lines = ["| ringbuffer, 16 KB, 33-byte records | vanilla records/s | patched records/s "
             "| vanilla readers saw | patched readers saw |", "|---|---|---|---|---|"]
    for a, b in zip(v.stress, p.stress):
        shares = [" / ".join(f"{s:.1%}" for s in r["reader_share"]) for r in (a, b)]
        lines.append(f"| {a['writers']} writer{'s' if a['writers'] > 1 else ''}, "
                     f"{a['records']:,} records | {a['records_per_s']:,} | "
                     f"{b['records_per_s']:,} | {shares[0]} | {shares[1]} |")
    return "\n".join(lines) + "\n"


def verdict_table(t: Dict) -> str:
    """The rig's own time to verdict (host wall time)."""
    sc = t["scenarios"]
    slowest = sorted(sc["per_test_median_s"].items(), key=lambda kv: -kv[1])[:3]
    rows = [("QEMU start to guest init, vanilla (median of "
             f"{t['boot_to_init_vanilla']['boots']} boots)",
             f"{t['boot_to_init_vanilla']['median_s']:.2f} s"),
            (f"QEMU start to guest init, patched (median of "
             f"{t['boot_to_init_patched']['boots']} boots)",
             f"{t['boot_to_init_patched']['median_s']:.2f} s"),
            (f"wall time per scenario test, median over {sc['tests']} tests of each one's "
             f"median of {sc['runs']} runs", f"{sc['median_per_test_s']:.2f} s"),
            (f"scenario suite, warm, {sc['workers']} workers (median of {sc['runs']} runs)",
             f"{sc['suite_median_s']:.0f} s")]
    rows += [(f"slowest: {name.split('::', 1)[1]}", f"{s:.1f} s") for name, s in slowest]
    lines = ["| time to verdict (host wall) | |", "|---|---|"]
    lines += [f"| {a} | {b} |" for a, b in rows]
    if sc["not_passed"]:
        lines.append(f"| tests that did not pass in some run | {len(sc['not_passed'])} |")
    return "\n".join(lines) + "\n" + phase_table(sc.get("phase_total_s"))


PHASE_NAMES = {"prepare": "finding the inputs (cache lookups, snapshot template)",
               "host_wait": "waiting for the host (a real-time boot elsewhere)",
               "qemu_start": "starting QEMU", "restore": "restoring the snapshot",
               "guest": "the guest's run", "finish": "checking the evidence files are whole",
               "parse": "parsing the evidence", "checks": "the checks, and pytest itself"}


def phase_table(totals: Optional[Dict[str, float]]) -> str:
    """Where the scenario tests' time goes: one row per phase."""
    if not totals:
        return ""
    whole = sum(totals.values()) or 1.0
    lines = ["", "| where the scenario tests' time goes (summed over the tests) | seconds | "
             "share |", "|---|---|---|"]
    lines += [f"| {PHASE_NAMES.get(p, p)} | {s:.1f} | {s / whole:.0%} |"
              for p, s in totals.items()]
    return "\n".join(lines) + "\n"


def to_json(v: FlavorFigures, p: FlavorFigures, meta: Dict,
            time_to_verdict: Optional[Dict] = None, rig_diff: Optional[Dict] = None) -> str:
    return json.dumps({"meta": meta, "vanilla": dataclasses.asdict(v),
                       "patched": dataclasses.asdict(p), "check": check(v, p),
                       "time_to_verdict": time_to_verdict or {},
                       "rig_diff": rig_diff or {}},
                      indent=2) + "\n"


def check(v: FlavorFigures, p: FlavorFigures) -> List[str]:
    """What of the seed's promises the figures break (empty: both hold)."""
    problems = []
    speedup = v.info_backlog["p99"] / max(1, p.info_backlog["p99"])
    if speedup < P99_SPEEDUP_MIN:
        problems.append(f"patched INFO printk() p99 under the backlog is {speedup:.1f}x lower "
                        f"than vanilla's ({p.info_backlog['p99']} ns vs "
                        f"{v.info_backlog['p99']} ns); the bound is {P99_SPEEDUP_MIN}x")
    if p.emergency["ratio"] > EMERGENCY_RATIO_MAX:
        problems.append(f"patched emergency line took {p.emergency['ratio']:.3f}x its wire time "
                        f"({p.emergency['ns']} ns for {p.emergency['line_bytes']} bytes); "
                        f"the bound is {EMERGENCY_RATIO_MAX}x")
    return problems
