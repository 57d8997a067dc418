"""rig bench --command CMD [--cold]: what a user's command costs, measured
as a new user meets it: from a fresh clone of the committed tree (HEAD),
with the build cache as it is (warm, or empty on a machine that never
built) or with an empty one (cold: RIG_CACHE a new directory, ccache and
QEMU's and the kernels' sources included). The wall time, the exit status,
the time the Debian packages took when some were missing (install-deps.sh's
own "[deps] installed" line) and every build step the run made (the
build_seconds of the manifests it left in the cache), and each pytest
suite it ran (its JUnit file in the clone's runs/: wall time and counts,
per kernel profile) go into the dated bench JSON under "commands", and
from there onto the measurements page.
The clone and the cold cache (under /var/tmp) are removed afterwards; the
command's output is kept in the runs directory."""
import datetime
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Dict, List

from rig import config, paths
from rig.artifacts.cache import MANIFEST
from rig.tools import junit

LOG_DIR = "bench-commands"
SCRATCH = "/var/tmp"


def head_commit() -> str:
    return subprocess.run(["git", "-C", str(paths.REPO), "rev-parse", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()


def build_steps(cache: Path, before=frozenset()) -> Dict[str, Dict]:
    """step -> builds and seconds, from the manifests a run left in cache
    (those not in before: the builds it made)."""
    steps: Dict[str, Dict] = {}
    for manifest in sorted(set(cache.glob(f"*/*/{MANIFEST}")) - set(before)):
        try:
            m = json.loads(manifest.read_text())
            m["step"]
        except (OSError, ValueError, TypeError, KeyError):
            continue            # damaged: the next use of the entry rebuilds it
        s = steps.setdefault(m["step"], {"builds": 0, "seconds": 0.0})
        s["builds"] += 1
        s["seconds"] = round(s["seconds"] + m.get("build_seconds", 0.0), 1)
    return steps


DEPS_DONE = re.compile(rb"^\[deps\] installed (\d+) packages? in (\d+) s$", re.M)


def deps_step(log_bytes: bytes) -> Dict[str, Dict]:
    """The packages install-deps.sh installed during the run, as a step."""
    found = DEPS_DONE.findall(log_bytes)
    if not found:
        return {}
    return {"deps": {"builds": sum(int(n) for n, _ in found),
                     "seconds": float(sum(int(s) for _, s in found))}}


def suites(runs: Path) -> Dict[str, Dict]:
    """The pytest suites a run left in runs/: the default profile's
    (runs/junit.xml: make test) and each other profile's
    (runs/profile-NAME/junit.xml: make test-profiles), with their wall time
    and counts (skipped as JUnit counts them: expected failures included);
    those whose file is missing or damaged are left out."""
    found = {"default": runs / "junit.xml"}
    found.update({d.name[len("profile-"):]: d / "junit.xml"
                  for d in sorted(runs.glob("profile-*"))})
    out: Dict[str, Dict] = {}
    for profile, path in found.items():
        try:
            verdicts = Counter(junit.verdicts(path).values())
        except junit.JUnitError:
            continue
        props = junit.suite_properties(path)
        out[profile] = {
            "tests": sum(verdicts.values()), "failures": verdicts["failed"],
            "errors": verdicts["error"], "skipped": verdicts["skipped"] + verdicts["xfailed"],
            "seconds": round(junit.suite_seconds(path), 1),
            "flavors": sorted(filter(None, props.get("flavors", "").split(","))),
            "smoke_only": sorted(filter(None, props.get("smoke_only", "").split(",")))}
    return out


def cache_state(cache: Path) -> str:
    """"empty" when no build was ever cached there (nor ccache filled), else "warm"."""
    built = cache.is_dir() and (any(cache.glob(f"*/*/{MANIFEST}")) or
                                any((cache / "ccache").glob("*/*")))
    return "warm" if built else "empty"


def measure(command: str, cold: bool) -> Dict:
    """Run command (a shell line) in a fresh clone of HEAD; its figures."""
    logs = paths.runs_root() / LOG_DIR
    logs.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    slug = re.sub(r"[^A-Za-z0-9]+", "-", command).strip("-")[:40]
    log = logs / f"{stamp}-{slug}.log"
    # Where a user's clone would be: readable by others (a test reads the
    # tree as another user), on the disk of a cold cache's tens of GB.
    work = Path(tempfile.mkdtemp(prefix="rig-bench-command-", dir=SCRATCH))
    os.chmod(work, 0o755)
    try:
        clone = work / "clone"
        subprocess.run(["git", "clone", "--quiet", str(paths.REPO), str(clone)], check=True)
        commit = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
        env = dict(os.environ)              # passed on to the command
        cache = paths.cache_root()
        if cold:
            cache = work / "cache"
            cache.mkdir()
            env[config.VARIABLES["cache_root"]] = str(cache)
        state = "cold" if cold else cache_state(cache)
        before = set(cache.glob(f"*/*/{MANIFEST}"))
        print(f"[bench] {command!r} in a fresh clone of {commit[:12]}, "
              f"{'empty' if cold else state} cache; output: {log}", flush=True)
        start = time.monotonic()
        with open(log, "wb") as out:
            proc = subprocess.run(["bash", "-c", command], cwd=clone, env=env,
                                  stdout=out, stderr=subprocess.STDOUT)
        wall = time.monotonic() - start
        steps = dict(deps_step(log.read_bytes()), **build_steps(cache, before))
        ran = suites(clone / "runs")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"[bench] {command!r}: exit {proc.returncode} after {wall:.0f} s", flush=True)
    return {"command": command, "cache": state, "commit": commit,
            "date": datetime.date.today().isoformat(), "wall_s": round(wall, 1),
            "exit_status": proc.returncode, "steps": steps, "suites": ran, "log": str(log)}


def merge(data: Dict, result: Dict) -> Dict:
    """data with result among its commands, replacing one of the same
    command and cache."""
    kept = [c for c in data.get("commands", [])
            if (c["command"], c["cache"]) != (result["command"], result["cache"])]
    return dict(data, commands=kept + [result])


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:04.1f} s" if seconds >= 60 \
        else f"{seconds:.1f} s"


def table(commands: List[Dict], page_machine: str = "") -> str:
    """The commands' rows; each names its machine (older entries ran on the
    page's own)."""
    rows = ["| command | cache | commit | machine | wall time | result |",
            "|---|---|---|---|---|---|"]
    for c in commands:
        result = "ok" if c["exit_status"] == 0 else f"FAILED (exit {c['exit_status']})"
        rows.append(f"| `{c['command']}` | {c['cache']} | {c['commit'][:12]} | "
                    f"{c.get('machine', page_machine)} | {minutes(c['wall_s'])} | {result} |")
    out = "\n".join(rows) + "\n"
    for c in commands:
        if c["steps"]:
            article = "an" if c["cache"] == "empty" else "a"
            out += (f"\nBuild steps of `{c['command']}` with {article} {c['cache']} cache (each "
                    "step's own time; the rest is booting and testing; deps: the Debian "
                    "packages, builds counting packages):\n\n| step | builds | seconds |\n"
                    "|---|---|---|\n")
            out += "".join(f"| {name} | {s['builds']} | {s['seconds']:.1f} |\n"
                           for name, s in sorted(c["steps"].items(),
                                                 key=lambda kv: -kv[1]["seconds"]))
            out += (f"| all | {sum(s['builds'] for s in c['steps'].values())} | "
                    f"{sum(s['seconds'] for s in c['steps'].values()):.1f} |\n")
        if c.get("suites"):
            out += suite_table(c)
    return out


def suite_table(c: Dict) -> str:
    """The pytest suites of one command, by kernel profile."""
    out = (f"\nThe pytest suites of `{c['command']}` ({c['cache']} cache), by kernel "
           "profile (wall time from the JUnit file, the builds it waited for included):\n\n"
           "| profile | tests | failed | skipped | wall time | flavors |\n|---|---|---|---|---|---|\n")
    for profile, s in c["suites"].items():
        flavors = ", ".join(s.get("flavors") or ["both"])
        if s.get("smoke_only"):
            flavors += "; " + ", ".join(s["smoke_only"]) + ": S1 and the golden scenarios"
        out += (f"| {profile} | {s['tests']} | {s['failures'] + s['errors']} | {s['skipped']} | "
                f"{minutes(s['seconds'])} | {flavors} |\n")
    return out
