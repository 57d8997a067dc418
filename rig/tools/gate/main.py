"""ci/gate: is a kernel change a regression of the properties the rig checks?

  ci/gate --tree LINUX --base REV (--head REV | --patch FILE) [--series]
          [--out DIR] [-- PYTEST ARGS]

Builds base and head with the rig's config (kernel-patches/series on top with
--series), boots each once (a kernel that cannot boot stops the gate), runs
the scenarios (or the pytest arguments after --) on both as a --kernel judged
against every seed property, and compares them test by test. Exit status: 0
no regression, 1 regression (named), 2 could not build, boot or run (why).
"""
import argparse
import datetime
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import List, Optional

from rig import config, paths, pytest_run
from rig.faults import RigFault, internal_error
from rig.artifacts import built as artifacts, custom
from rig.artifacts.cache import sha256_file
from rig.artifacts.kernel import SERIES, profile_fragments
from rig.artifacts.patching import read_series
from rig.artifacts.runner import BuildError, tail
from rig.tools.gate import formats, source
from rig.tools.gate.compare import SuiteResult, compare
from rig.tools.gate.source import GateError, Revision

EXIT_OK, EXIT_REGRESSION, EXIT_CANNOT = 0, 1, 2
# pytest -q lines worth echoing live (the full output goes to the side's log).
PROGRESS = re.compile(r"\[\s*\d+%\]\s*$|^(FAILED|ERROR|XPASS) |^\d+ (passed|failed)|"
                      r"^=+ .*(passed|failed|error).* =+$")


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def use_kernel(build: dict) -> None:
    """Make the revision's kernel the custom flavor, for boot() and pytest."""
    custom.use(Path(build["dir"]) / build["outputs"]["bzImage"],
               Path(build["dir"]) / build["outputs"]["build_dir"])


def smoke_boot(side: formats.Side, out: Path) -> None:
    """One plain boot: a kernel that does not reach a clean exit cannot be judged."""
    from rig.boot import BootRequest, boot
    config.set_fields(runs_root=str(out / f"{side.label}-runs"))
    print(f"[gate] {side.label}: boot check", flush=True)
    try:
        res = boot(BootRequest(flavor=custom.CUSTOM, name=f"gate-{side.label}"))
    except BuildError as e:       # the test module or initramfs for it, or QEMU
        raise GateError(f"{side.label} ({side.name}) cannot be booted: {e}") from None
    if res.outcome.cls != "clean":
        raise GateError(f"{side.label} ({side.name}) does not boot: {res.outcome.cls}: "
                        f"{res.outcome.detail} (run directory {res.run_dir})")
    print(f"[gate] {side.label}: boots cleanly ({res.summary['kernel']['release']})",
          flush=True)


def run_suite(side: formats.Side, out: Path, pytest_args: List[str]) -> SuiteResult:
    junit = out / f"{side.label}.junit.xml"
    log = out / f"{side.label}.pytest.log"
    args = ["--kernel", config.current().custom_kernel,
            "--kernel-build", config.current().custom_build, "--kernel-like", "patched",
            ] + (pytest_args or ["scenarios"])
    print(f"[gate] {side.label}: running {' '.join(pytest_args or ['scenarios'])} "
          f"(log: {log})", flush=True)
    env = config.environ(runs_root=str(out / f"{side.label}-runs"))
    with open(log, "w") as f:
        proc = pytest_run.start(args, junit, env=env)
        for line in proc.stdout:
            f.write(line)
            if PROGRESS.search(line):
                print(f"[gate] {side.label}: {line.rstrip()}", flush=True)
        rc = proc.wait()
    if not junit.is_file() or rc not in (0, 1):
        raise GateError(f"the suite did not run on {side.label} ({side.name}): pytest "
                        f"exit status {rc}\n{tail(log, 20)}")
    return SuiteResult.read(junit)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="ci/gate", description=__doc__.split("\n\n")[0])
    p.add_argument("--tree", required=True, type=Path, help="the kernel's git checkout")
    p.add_argument("--base", required=True, help="revision before the change")
    head = p.add_mutually_exclusive_group(required=True)
    head.add_argument("--head", help="revision with the change")
    head.add_argument("--patch", type=Path, help="the change as a patch file onto --base")
    p.add_argument("--series", action="store_true",
                   help="apply kernel-patches/series onto both before building")
    p.add_argument("--repo-url",
                   help="the tree's public https:// or git:// URL for the KCIDB output "
                        "(default: its origin remote, if that is one)")
    p.add_argument("--out", type=Path,
                   help="where the results go (default runs/gate-<time>)")
    p.add_argument("--hosts", metavar="FILE",
                   help="run the boot checks and both suites on this fleet of libvirt hosts "
                        "(docs/fleet.md), one pytest-xdist worker per slot")
    p.add_argument("--libvirt-uri", action="append", default=[], metavar="URI",
                   help="a libvirt host to run on (repeatable), instead of --hosts")
    p.add_argument("--host-slots", type=int, metavar="N",
                   help="slots of each --libvirt-uri host (default 1)")
    p.add_argument("--profile", choices=paths.PROFILES, default=None,
                   help="kernel profile both sides are built and judged on (default: "
                        "$RIG_PROFILE, else default): default, rt or debug (docs/profiles.md)")
    p.add_argument("pytest_args", nargs="*",
                   help="after --: the tests to run and pytest options (default: scenarios)")
    return p.parse_args(argv)


URL_RE = re.compile(r"^(https|git)://\S+$")


def repo_url(tree: Path, given: Optional[str]) -> str:
    """The URL KCIDB wants: given, or the tree's origin remote if it is an
    https:// or git:// URL; else none (a local path is not one)."""
    if given:
        if not URL_RE.match(given):
            raise GateError(f"--repo-url {given}: not an https:// or git:// URL")
        return given
    got = subprocess.run(["git", "-C", str(tree), "remote", "get-url", "origin"],
                         capture_output=True, text=True)
    url = got.stdout.strip()
    return url if got.returncode == 0 and URL_RE.match(url) else ""


def gate(args) -> int:
    config.set_fields(mutant=None)           # the gate's kernels are the tree's own
    if args.profile:
        config.set_fields(profile=args.profile)
    if args.hosts or args.libvirt_uri:
        from rig.vm import backend
        backend.choose("libvirt", args.libvirt_uri, args.hosts, args.host_slots)
    out = (args.out or paths.runs_root() / f"gate-{datetime.datetime.now():%Y%m%d-%H%M%S}")
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = now()
    base = Revision.of("base", args.tree, args.base)
    head = (Revision.of("head", args.tree, args.base, args.patch) if args.patch
            else Revision.of("head", args.tree, args.head))
    print(f"[gate] base {base.version}\n[gate] head {head.version}\n[gate] results: {out}",
          flush=True)
    artifacts.qemu(build=True)
    sides = []
    series_shas = ([sha256_file(p) for p in read_series(SERIES)] if args.series else [])
    for rev in (base, head):
        begun = now()
        manifest = source.build(rev, args.series)
        sides.append(formats.Side(rev.label, rev.name, rev.commit, rev.patch_sha256,
                                  str(rev.path), manifest, started=begun,
                                  repo_url=repo_url(args.tree, args.repo_url),
                                  patches=([rev.patch_sha256] if rev.patch_sha256 else [])
                                  + series_shas))
    for side in sides:          # both boot before either runs the suite: fail fast
        use_kernel(side.build)
        smoke_boot(side, out)
    for side in sides:
        use_kernel(side.build)
        side.suite = run_suite(side, out, args.pytest_args)
    kernel_config = " + ".join(["tinyconfig"] + [f"kernel-patches/{f.name}"
                                                 for f in profile_fragments()]) + (
        " + kernel-patches/series" if args.series else "") + f" (profile {paths.profile()})"
    res = formats.GateResult(sides[0], sides[1], compare(sides[0].suite, sides[1].suite),
                             kernel_config, started, run_id=f"{out.name}-{uuid.uuid4().hex[:8]}")
    written = formats.write_all(res, out)
    print(formats.summary(res), end="")
    print("[gate] wrote " + ", ".join(written.values()))
    if res.regressed:
        return EXIT_REGRESSION
    unjudged = sorted(set().union(*(s.suite.faults for s in sides)))
    if unjudged:
        print(f"[gate] CANNOT JUDGE: {len(unjudged)} test(s) failed on the rig's own fault, "
              f"first {unjudged[0]}: see summary.txt", file=sys.stderr, flush=True)
        return EXIT_CANNOT
    return EXIT_OK


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return gate(args)
    except RigFault as e:
        print(f"[gate] CANNOT JUDGE: {e}", file=sys.stderr, flush=True)
        return EXIT_CANNOT
    except KeyboardInterrupt:
        print("[gate] interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"[gate] CANNOT JUDGE: {where}{e.strerror or e}", file=sys.stderr, flush=True)
        return EXIT_CANNOT
    except Exception as e:          # the rig's own bug: one line here, the traceback kept
        print(f"[gate] CANNOT JUDGE: {internal_error(e)[0]}", file=sys.stderr, flush=True)
        return EXIT_CANNOT
