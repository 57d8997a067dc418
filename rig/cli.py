"""Command line: python3 -m rig SUBCOMMAND ... (--help on every one; each
subcommand is a cmd_NAME function and an add_NAME that registers its parser)."""
import argparse
import functools
import subprocess
import sys
from pathlib import Path

from rig import boot_options, config, faults, paths, rundir


def cmd_build(args) -> int:
    from rig.artifacts import built as artifacts
    targets = args.what
    if "all" in targets:
        targets = ["kernel", "qemu", "initramfs"]
    for what in targets:
        if what == "kernel":
            for flavor in args.flavor:
                artifacts.kernel(flavor, build=True, force=args.force)
        elif what == "qemu":
            artifacts.qemu(build=True, force=args.force)
        elif what == "module":
            from rig.artifacts.module import build_module
            for flavor in args.flavor:
                build_module(flavor, force=args.force)
        elif what == "initramfs":
            for flavor in args.flavor:
                artifacts.initramfs(flavor, build=True, force=args.force)
        elif what == "series-check":
            if not report_series_check(args.force):
                return 1
    return 0


def add_build(sub) -> None:
    p = sub.add_parser("build", help="build (or reuse from the cache) kernels, QEMU, initramfs",
                       description="Build what is missing from the cache; say why or reuse it.")
    p.add_argument("what", nargs="+",
                   choices=["kernel", "qemu", "module", "initramfs", "series-check", "all"],
                   help="all = kernel qemu initramfs (the initramfs builds the module); "
                        "series-check applies, checkpatches and builds the series patch by patch")
    p.add_argument("--flavor", action="append", choices=paths.FLAVORS,
                   help="kernel flavor (repeatable; default: both)")
    p.add_argument("--force", action="store_true", help="rebuild even on a cache hit")
    p.set_defaults(func=cmd_build)


def report_series_check(force: bool) -> bool:
    """Print the per-patch verdicts of kernel-patches/series; True if all hold."""
    from rig.artifacts.series_check import build_series_check
    m = build_series_check(force=force)
    for r in m["outputs"]["results"]:
        cp = "clean" if r.get("checkpatch_status") == 0 and not r["checkpatch"] else "NOT clean"
        print(f"  {r['patch']}: applies={'yes' if r['applies'] else 'NO'} "
              f"(offsets: {len(r['offsets'])}, git apply --check "
              f"{'ok' if r.get('git_apply') else 'REFUSES'}), checkpatch --strict {cp}, "
              f"builds={'yes' if r['builds'] else 'NO'}"
              + (f" ({r['build_seconds']} s)" if "build_seconds" in r else ""))
    print(f"[series-check] {'all patches hold' if m['outputs']['ok'] else 'FAILED'} "
          f"({m['dir']}/{m['outputs']['log']})")
    return m["outputs"]["ok"]


def cmd_boot(args) -> int:
    from rig.artifacts import custom
    from rig.boot import BootRequest, boot
    from rig.evidence.boot import Evidence
    from rig.evidence.properties import boot_checks
    from rig.vm.qemu_argv import HOST_CLOCK
    option = functools.partial(getattr, args)
    if boot_options.apply(option):
        args.flavor = custom.CUSTOM
    req = BootRequest(flavor=args.flavor, cmdline=" ".join(args.cmdline), smp=args.smp,
                      memory_mb=args.memory, accel=args.accel,
                      clock=args.clock or HOST_CLOCK,
                      icount_shift=boot_options.icount_shift(option),
                      baud_model=not args.no_baud_model,
                      init_timeout_s=args.init_timeout,
                      name=args.name, snapshot=args.snapshot == "on", min_free_mb=args.min_free,
                      lock_timeout_s=args.lock_timeout)
    from rig import inputs
    inputs.check(req.smp, req.memory_mb, req.cmdline, {})     # before a word is printed
    live = None if args.quiet else sys.stdout.buffer
    print(f"[boot] {args.flavor} kernel, {args.smp} vCPUs, accel {args.accel}", flush=True)
    result = boot(req, live=live)
    sys.stdout.flush()
    print(f"\n[boot] run directory: {result.run_dir}")
    for p in result.phases:
        print(f"[boot] phase {p.name:<9} {p.ended_by:<10} {p.wall_s:7.2f} s")
    print(f"[boot] outcome: {result.outcome.cls}: {result.outcome.detail}")
    if result.outcome.cls == "rig-error":
        print("[verdict] NONE: the run's evidence is incomplete (above); no verdict on the kernel")
        return 3
    checks = boot_checks(Evidence.of(result, lenient=True))
    for c in checks:
        print(f"[verdict] {c}")
    ok = all(c.ok for c in checks)
    print(f"[verdict] {'PASS' if ok else 'FAIL'}: {sum(c.ok for c in checks)} of "
          f"{len(checks)} boot properties hold ({result.summary['kernel']['release']}, "
          f"{result.summary['kernel']['source']})")
    return 0 if ok else 1


def add_boot(sub) -> None:
    p = sub.add_parser("boot", help="boot a kernel flavor and print the transcript live",
                       description="Boot one flavor under the rig's QEMU, print the console "
                       "live, then the exit class, phase timings and the boot properties (S1). "
                       "Exit 0 they hold, 1 they do not, 2 bad input, no room to run or a remote "
                       "host that failed (named), 3 the "
                       "run's evidence is incomplete (rig-error: no verdict).")
    p.add_argument("--flavor", choices=paths.FLAVORS, default="patched")
    boot_options.add_to(p.add_argument)
    p.add_argument("--cmdline", action="append", default=[],
                   help="extra kernel parameters, e.g. 'rig.steps=kmsg,sleep' (repeatable)")
    p.add_argument("--smp", type=int, default=2, help="vCPUs (default 2)")
    p.add_argument("--memory", type=int, default=256, help="guest RAM in MiB (default 256)")
    p.add_argument("--accel", choices=["tcg", "kvm", "auto"], default="tcg",
                   help="tcg (default); kvm or auto only after a probe boot succeeds")
    p.add_argument("--no-baud-model", action="store_true",
                   help="let the console UART transmit at once instead of at 115200 baud")
    p.add_argument("--init-timeout", type=float, default=60.0,
                   help="seconds the init phase may take before it counts as hung")
    p.add_argument("--min-free", type=int, default=rundir.DEFAULT_MIN_FREE_MB, metavar="MIB",
                   help="refuse to boot with less free space for the run directory "
                        f"(default {rundir.DEFAULT_MIN_FREE_MB} MiB)")
    p.add_argument("--name", default="boot", help="name part of the run directory")
    p.add_argument("--quiet", action="store_true", help="do not print the console live")
    p.set_defaults(func=cmd_boot)


def pytest_extra(args) -> list:
    """The pytest arguments given after `--` (argparse keeps the `--`)."""
    return args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args


def cmd_flakes(args) -> int:
    from rig.tools import flakes
    extra = pytest_extra(args)
    return flakes.main(args.runs, paths.runs_root() / "flakes", extra or ["scenarios"])


def add_flakes(sub) -> None:
    p = sub.add_parser("flakes", help="run scenarios N times and compare verdicts",
                       description="Run pytest on the scenarios N times in a row; exit 1 if "
                                   "any test's verdict differs between runs, 2 if a run "
                                   "failed on the rig's own fault (it judged nothing).")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("pytest_args", nargs=argparse.REMAINDER,
                   help="pytest arguments after -- (default: scenarios)")
    p.set_defaults(func=cmd_flakes)


def cmd_mutants(args) -> int:
    from rig.tools import mutants
    extra = pytest_extra(args)
    # Each profile keeps its own kill table (runs/mutants-debug).
    out = paths.runs_root() / f"mutants{paths.profile_suffix()}"
    return mutants.main(out, extra, args.only or [],
                        keep_builds=args.keep_builds, resume=args.resume)


def add_mutants(sub) -> None:
    p = sub.add_parser("mutants", help="run the scenarios on each kernel mutant",
                       description="Build the patched kernel with each patch of "
                                   "kernel-patches/mutants/series (and series.PROFILE) on "
                                   "top, run the scenarios on it, report which tests caught it; exit 1 if a "
                                   "mutant is not caught, 2 if one did not build or its run "
                                   "failed on the rig's own fault.")
    p.add_argument("--only", action="append", help="only this mutant (repeatable)")
    p.add_argument("--resume", action="store_true",
                   help="keep the verdicts of runs/mutants/kills.json for mutants whose kernel "
                        "(series, mutant, config, toolchain) and tests are unchanged; run the "
                        "others")
    p.add_argument("--keep-builds", action="store_true",
                   help="keep each mutant's kernel build in the cache (1.8 GB each); by "
                        "default it is removed once its scenarios ran")
    p.add_argument("pytest_args", nargs=argparse.REMAINDER,
                   help="pytest arguments after -- (default: scenarios)")
    p.set_defaults(func=cmd_mutants)


def cmd_diff(args) -> int:
    from rig.evidence import diffstream
    colour = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    return diffstream.main(args.a, args.b, args.json, args.ts_tolerance, not args.no_mask,
                           colour, sys.stdout, max_decompressed=args.max_decompressed << 20)


def add_diff(sub) -> None:
    p = sub.add_parser("diff", help="compare two kernel logs record by record",
                       description="Compare two kernel logs (files, pipes, '-' for standard "
                                   "input, xz or gzip data, or run directories for their "
                                   "console.log; console or dmesg lines with or without "
                                   "timestamps, /dev/kmsg dumps) as printk records: missing, extra "
                                   "and moved records, per-CPU order, level and CPU "
                                   "changes, timestamps, dropped counts, split and "
                                   "interleaved lines, then a unified diff. Exit 0 equal, "
                                   "1 different, 2 bad input.")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--ts-tolerance", type=float, metavar="SECONDS",
                   help="compare timestamps of matched records with this tolerance "
                        "(default: ignore timestamps)")
    p.add_argument("--no-mask", action="store_true",
                   help="match on the exact text: do not mask addresses, pids and hashes")
    p.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    add_max_decompressed(p)
    p.set_defaults(func=cmd_diff)


def add_max_decompressed(p) -> None:
    from rig.evidence.logread import MAX_DECOMPRESSED
    p.add_argument("--max-decompressed", type=int, metavar="MIB",
                   default=MAX_DECOMPRESSED >> 20,
                   help="stop reading compressed data past this many MiB, with an error "
                        f"(default {MAX_DECOMPRESSED >> 20})")


def cmd_parse(args) -> int:
    from rig.evidence import logcheck
    return logcheck.main(args.log, args.json, max_decompressed=args.max_decompressed << 20)


def add_parse(sub) -> None:
    p = sub.add_parser("parse", help="judge a saved kernel log on its own",
                       description="What a saved kernel log (a file, '-', xz or gzip data, or "
                                   "a run directory's console.log) shows on its own: console "
                                   "lines parse, crash headlines with their titles, dropped "
                                   "records, and, described, the CPU field, cut lines and "
                                   "emergency lines. Exit 0 all hold, 1 one does not, 2 bad "
                                   "input.")
    p.add_argument("log")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    add_max_decompressed(p)
    p.set_defaults(func=cmd_parse)


def cmd_results(args) -> int:
    from rig.tools import results
    return results.main(args.junit, args.out or "")


def add_results(sub) -> None:
    p = sub.add_parser("results", help="KTAP and JSON results from a pytest JUnit XML",
                       description="Write results.ktap (KTAP version 1: ERROR, SKIP and XFAIL "
                                   "directives, read by the kernel's kunit.py parse) and "
                                   "results.json next to a pytest JUnit XML file; `make test` "
                                   "does it for runs/junit.xml.")
    p.add_argument("junit")
    p.add_argument("--out", help="directory to write to (default: the JUnit file's)")
    p.set_defaults(func=cmd_results)


def cmd_replay(args) -> int:
    from rig.tools import replay
    try:
        return replay.replay(Path(args.bundle), gdb_port=args.gdb_port if args.gdb else None,
                             live=None if args.quiet else sys.stdout.buffer)
    except replay.bundle.BundleError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def add_replay(sub) -> None:
    p = sub.add_parser("replay", help="run a recorded boot again and compare its evidence",
                       description="Re-run the boot recorded in a run directory's "
                                   "bundle.json from the cached inputs (or say which input "
                                   "is missing and how to rebuild it), and report whether "
                                   "console.log, uart.log and side.bin are byte-identical "
                                   "and where they first differ. Exit 0 identical, 1 "
                                   "different, 2 cannot replay.")
    p.add_argument("bundle", help="a run directory (or its bundle.json)")
    p.add_argument("--gdb", action="store_true",
                   help="start paused with QEMU's gdb stub, no phase timeouts")
    p.add_argument("--gdb-port", type=int, default=1234, metavar="PORT")
    p.add_argument("--quiet", action="store_true", help="do not print the console live")
    p.set_defaults(func=cmd_replay)


def cmd_golden(args) -> int:
    """Rewrite golden/ from fresh runs of the golden scenarios and say what changed."""
    from rig import pytest_run
    chosen = ["-m", "golden", "--golden=update"]
    for flavor in args.flavor or []:
        chosen += ["--flavor", flavor]
    rc = pytest_run.run(chosen + (pytest_extra(args) or ["scenarios"]))
    subprocess.call(["git", "status", "--short", "--", "golden"], cwd=paths.REPO)
    return faults.exit_code_of(rc)


def add_golden(sub) -> None:
    p = sub.add_parser("golden", help="rewrite golden/ from runs of the golden scenarios",
                       description="Run the golden scenarios with --golden=update: "
                                   "each boot's normalized transcript replaces its golden "
                                   "file; prints what is new or changed.")
    p.add_argument("--flavor", action="append", choices=paths.FLAVORS)
    p.add_argument("pytest_args", nargs=argparse.REMAINDER, help="more pytest arguments after --")
    p.set_defaults(func=cmd_golden)


def cmd_determinism(args) -> int:
    from rig.tools import determinism
    extra = pytest_extra(args)
    return determinism.main(args.runs, paths.runs_root() / "determinism",
                            extra or ["scenarios"])


def add_determinism(sub) -> None:
    p = sub.add_parser("determinism", help="run the golden scenarios N times, "
                                           "compare every boot's evidence bytes",
                       description="Run pytest -m golden N times; exit 1 if any "
                                   "boot's console.log, uart.log or side.bin differs "
                                   "between runs (naming the first difference), 2 if a run "
                                   "failed on the rig's own fault.")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("pytest_args", nargs=argparse.REMAINDER,
                   help="pytest arguments after -- (default: scenarios)")
    p.set_defaults(func=cmd_determinism)


def cmd_report(args) -> int:
    from rig.tools.report import main as report
    return report.main([Path(r) for r in args.runs], args.junit and Path(args.junit),
                       args.out and Path(args.out))


def add_report(sub) -> None:
    p = sub.add_parser("report", help="HTML page per run: verdicts, transcript, timeline",
                       description="Write RUN/report.html for each run directory: the "
                                   "verdict per property, the transcript coloured by level "
                                   "with emergency lines marked, and a timeline of the "
                                   "register log with one lane per vCPU; and an index page "
                                   "for several runs or a whole suite (--junit).")
    p.add_argument("runs", nargs="*", metavar="RUN", help="run directories")
    p.add_argument("--junit", metavar="FILE",
                   help="pytest's JUnit XML: each run's test verdict; without RUN, "
                        "report on every run it names")
    p.add_argument("--out", metavar="DIR", help="where index.html goes (default runs/)")
    p.set_defaults(func=cmd_report)


def cmd_bench(args) -> int:
    from rig.tools.bench import main as bench
    page_dir = Path(args.page) if args.page else None
    out = Path(args.out) if args.out else paths.runs_root() / "bench.json"
    if args.from_json:
        return bench.show(Path(args.from_json), page_dir, args.check)
    if args.command:
        return bench.command(args.command, args.cold, out, page_dir)
    if args.fleet:
        return bench.fleet_suite(out, page_dir)
    if args.long_logs:
        return bench.long_logs(out, page_dir, args.check)
    return bench.main(args.lines, out, args.check, args.stress_records,
                      args.verdict_runs, args.verdict_workers, page_dir)


def cmd_demo(args) -> int:
    from rig.tools import demo
    return demo.main()


def add_demo(sub) -> None:
    p = sub.add_parser("demo", help="the patched kernel's NMI emergency line overtaking a "
                       "backlog, live, with figures, verdicts and a report",
                       description="Boot the patched kernel once (building only it, QEMU "
                       "and its initramfs): CPU 1 stores a backlog of INFO lines, the UART "
                       "fires an NMI at CPU 1 in the middle of a line, and the NMI's ERR line "
                       "goes out at once. Shows the console as it happens, then when the call "
                       "was made, when its last bit left the wire, how many lines waited, "
                       "the verdicts and the run's HTML report. Exit 0 every property holds, "
                       "1 one does not, 2 the rig's own failure (named), 3 no verdict "
                       "(incomplete evidence).")
    p.set_defaults(func=cmd_demo)


def add_bench(sub) -> None:
    p = sub.add_parser("bench", help="printk latency and throughput, vanilla vs patched",
                       description="Boot both flavors under -icount and measure, in guest "
                                   "virtual time: INFO printk() latency with an idle console "
                                   "and under a backlog, an emergency line's latency to the "
                                   "wire, console throughput, the ringbuffer under pinned "
                                   "writers and two readers; then the rig's own time to "
                                   "verdict in host wall time. Prints tables, writes JSON.")
    p.add_argument("--lines", type=int, default=10_000, help="backlog size (default 10000)")
    p.add_argument("--stress-records", type=int, default=100_000,
                   help="records per ringbuffer stress run (default 100000)")
    p.add_argument("--verdict-runs", type=int, default=5,
                   help="runs of the scenario suite for the time to verdict (default 5; "
                        "0 skips it)")
    p.add_argument("--verdict-workers", type=int, default=0,
                   help="xdist workers for those runs (default one per core, as make test; "
                        "1 times each scenario alone)")
    p.add_argument("--out", metavar="FILE", help="JSON file (default runs/bench.json)")
    p.add_argument("--check", action="store_true",
                   help="exit 1 unless patched INFO p99 under the backlog is 100x lower than "
                        "vanilla's and its emergency line within 1.1x of its wire time")
    p.add_argument("--page", metavar="DIR",
                   help="also write the measurements page DIR/DATE.md (make bench: "
                        "docs/measurements)")
    p.add_argument("--from", dest="from_json", metavar="FILE",
                   help="measure nothing: show (and with --page write) the page of this "
                        "bench JSON file")
    p.add_argument("--command", metavar="CMD",
                   help="measure this shell command instead, from a fresh clone of HEAD "
                        "(e.g. 'make test'), and add its wall time to the day's JSON and page")
    p.add_argument("--cold", action="store_true",
                   help="with --command: an empty build cache (ccache included), as on a "
                        "new machine; the step times of its builds are recorded too")
    p.add_argument("--long-logs", action="store_true",
                   help="measure only rig parse, rig diff, rig report and a run's judging on "
                        "1 GB logs (time and peak memory, against a 300 MB budget), and what "
                        "checking the cached inputs costs, into the day's JSON and page")
    p.add_argument("--fleet", action="store_true",
                   help="measure the scenario suite on one test host and on two instead "
                        "(network namespaces with a libvirtd each, needs root; "
                        "docs/fleet.md), and what sending the inputs costs")
    p.set_defaults(func=cmd_bench)


def cmd_run(args) -> int:
    """Run one scenario file of scenarios/ through pytest."""
    name = args.scenario
    candidates = [paths.REPO / name, paths.REPO / "scenarios" / name,
                  paths.REPO / "scenarios" / f"test_{name}.py",
                  paths.REPO / "scenarios" / f"{name}.py"]
    target = next((c for c in candidates if c.is_file()), None)
    if target is None:
        known = sorted(p.stem[len("test_"):] for p in (paths.REPO / "scenarios").glob("test_*.py"))
        print(f"error: no scenario {name!r}; known: {', '.join(known)}", file=sys.stderr)
        return 2
    from rig import pytest_run
    chosen = [str(target)] + (["--flavor", args.flavor] if args.flavor else [])
    return faults.exit_code_of(pytest_run.run(chosen + pytest_extra(args), quiet=False))


def add_run(sub) -> None:
    p = sub.add_parser("run", help="run one scenario from scenarios/ with pytest",
                       description="Run one scenario (e.g. `boot` for scenarios/test_boot.py).")
    p.add_argument("scenario", help="scenario name (boot) or path to its test file")
    p.add_argument("--flavor", choices=paths.FLAVORS, help="only this flavor (default both)")
    p.add_argument("pytest_args", nargs=argparse.REMAINDER,
                   help="further pytest arguments, after --")
    p.set_defaults(func=cmd_run)


def cmd_prune(args) -> int:
    from rig.artifacts import prune
    prune.prune(args.unused_for, args.dry_run)
    return 0


def add_hosts(sub) -> None:
    p = sub.add_parser("hosts", help="the fleet of libvirt hosts: list them, check them",
                       description="The hosts of --hosts FILE or --libvirt-uri (docs/fleet.md), "
                       "with their slots; --check connects to each and says what it runs. "
                       "Exit 0, 2 a bad hosts file or a host that does not answer (named).")
    p.add_argument("--hosts", metavar="FILE", help="a hosts file")
    p.add_argument("--libvirt-uri", action="append", default=[], metavar="URI")
    p.add_argument("--host-slots", type=int, default=1, metavar="N",
                   help="slots of each --libvirt-uri host (default 1)")
    p.add_argument("--slots", action="store_true",
                   help="print only the total of slots (the workers to run)")
    p.add_argument("--check", action="store_true", help="connect to each host")
    p.set_defaults(func=cmd_hosts)


def cmd_hosts(args) -> int:
    from rig.fleet import check, hosts
    fleet = (hosts.read(Path(args.hosts)) if args.hosts else
             hosts.from_uris(args.libvirt_uri, args.host_slots) if args.libvirt_uri else None)
    if fleet is None:
        raise hosts.HostsError("give --hosts FILE or --libvirt-uri URI")
    if args.slots:
        print(sum(h.slots for h in fleet))
        return 0
    if not args.check:
        for h in fleet:
            print(f"{h.name} {h.uri} slots={h.slots} lock={h.lock}")
        return 0
    ok, lines = check.report(fleet)
    print("\n".join(lines))
    return 0 if ok else faults.EXIT_RIG


def add_cache(sub) -> None:
    p = sub.add_parser("cache", help="the build cache: prune what nothing used lately")
    what = p.add_subparsers(dest="cache_cmd", required=True)
    q = what.add_parser("prune", help="remove cache entries unused for a while",
                        description="Remove the build cache's entries (kernels, QEMU, "
                        "initramfs, snapshot templates, gate trees) that no build or boot "
                        "used for HOURS; ccache and the downloaded sources are left alone.")
    q.add_argument("--unused-for", type=float, default=7 * 24, metavar="HOURS",
                   help="remove entries unused for this long (default 168: a week)")
    q.add_argument("--dry-run", action="store_true", help="only say what would go")
    q.set_defaults(func=cmd_prune)


# Each subcommand registers its own parser, beside the function that runs it.
SUBCOMMANDS = (add_build, add_boot, add_run, add_flakes, add_diff, add_parse, add_results,
               add_replay, add_golden, add_determinism, add_report, add_bench, add_mutants,
               add_demo, add_cache, add_hosts)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python3 -m rig", description=__doc__,
        epilog="Exit codes of every subcommand: 0 every property holds, 1 a property of the "
               "kernel does not hold, 2 bad input or a failure of the rig or its host (named "
               "on a line starting 'error:'), 3 the run's evidence is incomplete (no verdict).")
    sub = p.add_subparsers(dest="cmd", required=True)
    for add in SUBCOMMANDS:
        add(sub)
    for command in sub.choices.values():
        add_profile(command)
    return p


def add_profile(p: argparse.ArgumentParser) -> None:
    """--profile on every subcommand: the kernels it builds and boots."""
    p.add_argument("--profile", choices=paths.PROFILES, default=None,
                   help="kernel profile (default: $RIG_PROFILE, else default): default "
                        "(kernel-patches/rig.config), rt (PREEMPT_RT) or debug (lockdep, "
                        "atomic-sleep checks, latency tracers); docs/profiles.md")


def main(argv=None) -> int:
    """Run a subcommand; its exit code as rig.faults says: 0 holds, 1 a
    property does not hold, 2 bad input or the rig's own failure (named,
    never a traceback), 3 the run's evidence is incomplete."""
    args = build_parser().parse_args(argv)
    # SIGTERM/SIGHUP unwind like Ctrl-C: builds kill their make process group
    # and boots their QEMU on the way out.
    from rig.vm.machine import install_signal_cleanup
    install_signal_cleanup()
    if args.profile:
        config.set_fields(profile=args.profile)     # for its builds and child processes
    if getattr(args, "flavor", None) is None and args.cmd == "build":
        args.flavor = list(paths.FLAVORS)
    try:
        return args.func(args)
    except faults.RigFault as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        # A file the rig needs and cannot use: its name and why.
        where = f"{e.filename}: " if e.filename else ""
        print(f"error: {where}{e.strerror or e}; the rig cannot go on (not a verdict on "
              f"the kernel)", file=sys.stderr)
        return faults.EXIT_RIG
    except Exception as e:          # the rig's own bug: one line here, the traceback kept
        message, _ = faults.internal_error(e)
        print(f"error: {message}", file=sys.stderr)
        return faults.EXIT_RIG
