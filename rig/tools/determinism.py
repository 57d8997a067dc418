"""rig determinism: run the golden scenarios N times and check that
every boot's evidence (transcript, register log, side channel) is
byte-identical from run to run.

Boots are matched across runs by their bundle: the test's node id, the boot's
name and its place among that test's boots. The first run's directories are
kept to show where a later run first differs; the others are deleted once
hashed (a flood's register log is megabytes).
"""
import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Tuple

from rig import bundle, config, pytest_run
from rig.tools.junit import verdicts

Key = Tuple[str, str, int]          # (test node id, boot name, n-th boot of the test)


def boots_of(runs_dir: Path) -> Dict[Key, Path]:
    """Run directories of one pytest session, keyed so that runs can be matched."""
    found = []
    for d in sorted(runs_dir.iterdir()) if runs_dir.is_dir() else []:
        try:
            b = bundle.load(d)
        except bundle.BundleError:
            continue
        if not b.get("determinism"):
            continue       # a boot the test runs without -icount (S6's host NMI)
        # The directory name ends in -<pid>-<counter>: the counter orders boots.
        found.append((int(d.name.rsplit("-", 1)[1]), b.get("test") or "?", b["name"], d))
    out, seen = {}, defaultdict(int)
    for _, test, name, d in sorted(found):
        seen[(test, name)] += 1
        out[(test, name, seen[(test, name)])] = d
    return out


def hashes(run_dir: Path) -> Dict[str, str]:
    """The evidence hashes the boot recorded in its bundle (hashed again only
    if the harness died before it could record them)."""
    recorded = bundle.load(run_dir).get("evidence") or bundle.evidence_hashes(run_dir)
    return {n: recorded[n]["sha256"] if recorded.get(n) else "absent"
            for n in bundle.ALL_EVIDENCE}


def disagreements(runs: List[Dict[Key, Dict[str, str]]]) -> Dict[Key, List[int]]:
    """Boots whose evidence hashes are not the same in every run (or that are
    missing from a run): key -> the runs (1-based) that differ from run 1."""
    keys = sorted(set().union(*runs)) if runs else []
    out = {}
    for key in keys:
        ref = runs[0].get(key)
        differ = [i + 1 for i, run in enumerate(runs) if run.get(key) != ref or ref is None]
        if differ:
            out[key] = differ
    return out


def main(runs: int, out_dir: Path, pytest_args: List[str]) -> int:
    from rig.tools.replay import first_difference
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    seen: List[Dict[Key, Dict[str, str]]] = []
    dirs: List[Dict[Key, Path]] = []
    failed_tests = set()
    for i in range(1, runs + 1):
        runs_dir, junit = out_dir / f"run-{i}", out_dir / f"run-{i}.xml"
        print(f"[determinism] run {i}/{runs}: pytest -m golden {' '.join(pytest_args)}",
              flush=True)
        pytest_run.run_judged(["-m", "golden", "--keep-runs"] + pytest_args, junit,
                              env=config.environ(runs_root=str(runs_dir)))
        failed_tests |= {t for t, v in verdicts(junit).items() if v not in ("passed", "xfailed")}
        boots = boots_of(runs_dir)
        seen.append({k: hashes(d) for k, d in boots.items()})
        dirs.append(boots)
        bad_now = disagreements(seen)
        if i > 1:          # keep run 1 and any run that differs, for the report
            keep = {dirs[-1][k] for k, r in bad_now.items() if i in r and k in dirs[-1]}
            for d in set(boots.values()) - keep:
                shutil.rmtree(d, ignore_errors=True)
    bad = disagreements(seen)
    report = {"runs": runs, "boots": len(set().union(*seen)) if seen else 0,
              "differing": {f"{t} {n}#{k}": r for (t, n, k), r in bad.items()},
              "failed_tests": sorted(failed_tests)}
    (out_dir / "determinism.json").write_text(json.dumps(report, indent=1) + "\n")
    for (test, name, k), differ in bad.items():
        print(f"[determinism] DIFFERS {test} (boot {name}#{k}) in runs {differ}")
        ref, other = dirs[0].get((test, name, k)), None
        for r in differ:
            other = dirs[r - 1].get((test, name, k))
            if other is not None and other.is_dir():
                break
        for n in bundle.ALL_EVIDENCE:
            if not (ref and other and other.is_dir() and (ref / n).is_file()
                    and (other / n).is_file()):
                continue
            a, b = (ref / n).read_bytes(), (other / n).read_bytes()
            if a != b:
                print(f"    {n}: " + first_difference(n, a, b))
    for t in sorted(failed_tests):
        print(f"[determinism] test failed in some run: {t}")
    print(f"[determinism] {report['boots']} boots, {runs} runs: "
          f"{'byte-identical evidence every time' if not bad else f'{len(bad)} differ'}"
          f" ({out_dir})")
    return 1 if bad or not seen or not report["boots"] else 0
