"""Run the scenarios against mutants of the patched kernel: each mutant in
kernel-patches/mutants/ breaks one property, and the suite must catch every
one of them (some scenario fails, with a message naming the property). A
mutant nobody catches is a hole in the suite.

Every run writes its kill table: kills.json in the output directory (mutant,
what it breaks, the tests that caught it and the first line of each message),
and a whole run, not one limited by --only, also renders it into
docs/mutants.md, the generated page the docs link to.
"""
import datetime
import json
import shutil
import sys
from pathlib import Path
from typing import Dict, List

from rig import children, config, faults, paths, pytest_run
from rig.artifacts.kernel import MUTANTS, kernel_step, mutant_series
from rig.inputs import BadInput
from rig.tools.junit import failure_messages


def main(out_dir: Path, pytest_args: List[str], only: List[str],
         keep_builds: bool = False, resume: bool = False) -> int:
    out_dir.mkdir(parents=True, exist_ok=True)
    kills = out_dir / "kills.json"
    series = mutant_series()
    unknown = sorted(set(only) - set(series))
    if unknown:
        raise BadInput(f"--only {', '.join(unknown)}: no such mutant for the "
                       f"{paths.profile()} profile in kernel-patches/mutants/series"
                       f"{' and series.' + paths.profile() if paths.profile_suffix() else ''}; "
                       f"it has: {', '.join(series)}")
    names = [n for n in series if n in only] if only else series
    tests = " ".join(pytest_args or ["scenarios"])
    earlier = earlier_rows(kills) if resume else {}
    rows = []
    for name in names:
        step = mutant_kernel_step(name)
        key = step.key
        row = earlier.get(name)
        if row and row.get("key") == key and row.get("tests") == tests:
            print(f"[mutants] {name}: {row['verdict']} in the run of {row['date']} "
                  f"(same kernel, same tests): not run again", flush=True)
            rows.append(row)
            continue
        rows.append(run_mutant(name, key, tests, out_dir, pytest_args))
        if not keep_builds:
            drop_kernel_build(name, step.dir)
        # After each mutant: an interrupted run resumes from here (--resume).
        write_kill_table(kills, merged(series, rows, earlier))
    table = merged(series, rows, earlier)
    write_kill_table(kills, table)
    if not only and sorted(r["mutant"] for r in table) == sorted(series):
        render_kill_table(kills, paths.REPO / "docs" / f"mutants{paths.profile_suffix()}.md")
    print("\n[mutants] report")
    for row in rows:
        print(f"  {row['mutant']}: {row['verdict']} by {len(row['caught_by'])} test(s)")
        for test_id, msg in sorted(row["caught_by"].items()):
            print(f"    {test_id}: {msg[:160]}")
    if any(r["verdict"] == "BUILD FAILED" for r in rows):
        print("[mutants] a mutant did not build: the rig's own test data failed, no verdict "
              "on it (exit 2)")
        return faults.EXIT_RIG
    return 0 if rows and all(r["verdict"] == "caught" for r in rows) else 1


def merged(series: List[str], rows: List[Dict], earlier: Dict[str, Dict]) -> List[Dict]:
    """This run's rows, then the earlier run's rows of the other mutants of
    the series (a resumed or --only run keeps them), in the series' order."""
    by_name = {n: r for n, r in earlier.items() if n in series}
    by_name.update({r["mutant"]: r for r in rows})
    return [by_name[n] for n in series if n in by_name]


def run_mutant(name: str, key: str, tests: str, out_dir: Path, pytest_args: List[str]) -> Dict:
    env = config.environ(mutant=name)
    print(f"[mutants] {name}: building the patched kernel with the mutant on top", flush=True)
    build = children.run_tied([sys.executable, "-m", "rig", "build", "kernel", "initramfs",
                               "--flavor", "patched"], env=env)
    if build.returncode != 0:
        return kill_row(name, "BUILD FAILED", {}, key, tests)
    junit = out_dir / f"mutant-{name}.xml"
    print(f"[mutants] {name}: running the scenarios on it", flush=True)
    # A run that failed on the rig's own fault catches nothing: SuiteFault.
    pytest_run.run_judged(["--flavor", "patched", "--golden=off"] +
                          (pytest_args or ["scenarios"]), junit, env=env)
    caught = failure_messages(junit)
    return kill_row(name, "caught" if caught else "NOT CAUGHT", caught, key, tests)


def mutant_kernel_step(name: str):
    """The cache step of the mutant's kernel: its key covers the series, the
    mutant, the config and the toolchain it is built from."""
    with config.use(mutant=name):
        return kernel_step("patched")


def earlier_rows(kills: Path) -> Dict[str, Dict]:
    """The rows of an earlier run's kill table, by mutant (none if unreadable)."""
    try:
        return {r["mutant"]: r for r in json.loads(kills.read_text())["mutants"]}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def drop_kernel_build(name: str, build_dir: Path) -> None:
    """A mutant's kernel is booted by nothing else, and twenty of them (a
    source tree each) would fill the disk: remove its cache entry. A rerun
    builds it again, mostly from ccache. Its module and initramfs entries
    are small and stay."""
    if build_dir.is_dir():
        print(f"[mutants] {name}: removing its kernel build {build_dir}", flush=True)
        shutil.rmtree(build_dir, ignore_errors=True)


def describe(name: str) -> str:
    """What the mutant breaks: the first line of its patch, after its name."""
    first = (MUTANTS / f"{name}.patch").read_text().splitlines()[0]
    return first.split(":", 1)[1].strip() if first.startswith("Mutant ") else first


def kill_row(name: str, verdict: str, caught: Dict[str, str], key: str = "",
             tests: str = "") -> Dict:
    """One mutant's row: what it breaks, the verdict, the first line of each
    catching test's message, and what the verdict was reached on."""
    return {"mutant": name, "breaks": describe(name), "verdict": verdict,
            "caught_by": {t: msg.splitlines()[0] if msg else ""
                          for t, msg in sorted(caught.items())},
            "key": key, "tests": tests, "date": datetime.date.today().isoformat()}


def write_kill_table(path: Path, rows: List[Dict]) -> None:
    table = {"date": datetime.date.today().isoformat(), "mutants": rows}
    path.write_text(json.dumps(table, indent=1) + "\n")


def render_kill_table(kills: Path, page: Path) -> None:
    """docs/mutants.md from a run's kills.json."""
    table = json.loads(kills.read_text())
    out = ["# Mutants and what catches them" +
           (f", kernel profile {paths.profile()}" if paths.profile_suffix() else ""),
           "",
           f"Generated by `make mutants` on {table['date']} from `kills.json`; do not edit.",
           f"Runs: {', '.join(sorted({m.get('date', table['date']) for m in table['mutants']}))}"
           f" (a resumed run, `--resume`, keeps the rows of mutants whose kernel and tests"
           f" are unchanged).",
           "Each mutant in `kernel-patches/mutants/` breaks one property; the suite must",
           "fail on it with a message that names the property in its first words.",
           "",
           "| mutant | what it breaks | verdict | caught by (first line of the message) |",
           "|---|---|---|---|"]
    for m in table["mutants"]:
        caught = "<br>".join(f"`{t.split('::')[-1]}`: {msg[:140]}".replace("|", "\\|")
                             for t, msg in m["caught_by"].items()) or "-"
        out.append(f"| `{m['mutant']}` | {m['breaks'].replace('|', '/')} | {m['verdict']} "
                   f"| {caught} |")
    page.write_text("\n".join(out) + "\n")
