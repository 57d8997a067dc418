"""Run the scenarios against mutants of the patched kernel: each mutant in
kernel-patches/mutants/ breaks one property, and the suite must catch every
one of them (some scenario fails, with a message naming the property). A
mutant nobody catches is a hole in the suite.
"""
import os
import subprocess
import sys
from pathlib import Path
from typing import List

from rig.build.kernel import MUTANTS
from rig.build.patching import read_series
from rig.junit import failure_messages


def main(out_dir: Path, pytest_args: List[str], only: List[str]) -> int:
    out_dir.mkdir(parents=True, exist_ok=True)
    names = [p.stem for p in read_series(MUTANTS / "series")]
    if only:
        names = [n for n in names if n in only]
    rows = []
    for name in names:
        env = dict(os.environ, RIG_MUTANT=name)
        print(f"[mutants] {name}: building the patched kernel with the mutant on top",
              flush=True)
        build = subprocess.run([sys.executable, "-m", "rig", "build", "kernel", "initramfs",
                                "--flavor", "patched"], env=env)
        if build.returncode != 0:
            rows.append((name, "BUILD FAILED", {}))
            continue
        junit = out_dir / f"mutant-{name}.xml"
        print(f"[mutants] {name}: running the scenarios on it", flush=True)
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "--flavor", "patched", "--golden=off", f"--junitxml={junit}"]
                       + (pytest_args or ["scenarios"]), env=env)
        caught = failure_messages(junit) if junit.is_file() else {}
        rows.append((name, "caught" if caught else "NOT CAUGHT", caught))
    print("\n[mutants] report")
    for name, verdict, caught in rows:
        print(f"  {name}: {verdict} by {len(caught)} test(s)")
        for test_id, msg in sorted(caught.items()):
            print(f"    {test_id}: {msg[:160]}")
    return 0 if rows and all(v == "caught" for _, v, _ in rows) else 1
