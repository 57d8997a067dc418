"""Boot one flavor with the rig's artifacts and keep everything in a run
directory (rig.rundir.RunDir names its files: the evidence QEMU writes, the
harness's records, summary.json with the outcome, phase timings and the
versions of every input, and bundle.json, which replays the run)."""
import itertools
import os
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Callable, Dict, List, Optional, Tuple

from rig import bundle, paths, rundir
from rig import inputs as request_check
from rig.artifacts import built as artifacts
from rig.artifacts.firmware import firmware
from rig.evidence import logparse
from rig.rundir import BootResult, RunDir
from rig.vm import backend, completeness, snapshot
from rig.vm import outcome as outcome_mod
from rig.vm.phases import Phase, default_phases, panic_hold_phases, warm_reset_phases
from rig.vm.remote_host import HostError
from rig.vm.qemu_argv import DEFAULT_ICOUNT_SHIFT, HOST_CLOCK, ICOUNT_CLOCK, MachineConfig

_counter = itertools.count()


@dataclass
class BootRequest:
    flavor: str = "patched"
    cmdline: str = ""             # extra kernel parameters, e.g. "rig.hang=1"
    smp: int = 2
    memory_mb: int = 256
    accel: str = "tcg"            # tcg, kvm or auto (kvm only after a probe boot succeeds)
    clock: str = HOST_CLOCK       # host, or icount: byte-identical runs (rig.vm.qemu_argv)
    icount_shift: int = DEFAULT_ICOUNT_SHIFT
    baud_model: bool = True
    uart_props: Dict[str, str] = field(default_factory=dict)   # e.g. an NMI trigger
    init_timeout_s: float = 60.0
    # (console regex, QMP command, arguments): once the console shows the
    # pattern, send the command, e.g. (rb"spins", "inject-nmi", {}).
    qmp_when: Optional[Tuple[bytes, str, Dict]] = None
    # The kernel panics and reboots (panic=-1); QEMU resets the machine, RAM
    # kept, and the second boot runs init again (S10's ramoops read-back).
    warm_reset: bool = False
    # The kernel panics with panic=0 and holds: the run ends once the
    # end-of-panic line is out and QEMU still runs (phases.panic_hold_phases).
    panic_hold: bool = False
    name: str = "boot"
    run_dir: Optional[Path] = None
    # "" the standard initramfs, "bench" rig bench's (rig.artifacts.initramfs)
    initramfs: str = ""
    # Start from a saved VM at init's snapshot point instead of booting
    # (rig/vm/snapshot.py), where the boot allows it.
    snapshot: bool = False
    # A second instrumented UART for the test module's second console
    # (rigprintk.second_console=): console2.log and uart2.log.
    second_uart: bool = False
    # Refuse to start with less free space for the run directory.
    min_free_mb: int = rundir.DEFAULT_MIN_FREE_MB
    # Give up waiting for the host lock after this long (None: wait).
    lock_timeout_s: Optional[float] = None
    # Set on the second run of a boot whose remote host failed: which host,
    # its error, the first run's directory (rig.boot.rerun_elsewhere).
    rerun_of: Optional[Dict[str, str]] = None


def run_dir_path(name: str, flavor: str) -> Path:
    """A new run directory's path (not made yet): unique per process and
    call, so parallel pytest workers never collide."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-")[:60]
    flavor = re.sub(r"[^A-Za-z0-9_.-]+", "-", flavor)[:20]
    return paths.runs_root() / f"{stamp}-{safe}-{flavor}-{os.getpid()}-{next(_counter)}"


def new_run_dir(name: str, flavor: str) -> Path:
    d = run_dir_path(name, flavor)
    d.mkdir(parents=True)
    return rundir.make_private(d)


def guest_time_of(console: bytes, needle: str) -> Optional[float]:
    """Guest timestamp (s, virtual) of the first console line containing needle."""
    for line in logparse.parse_transcript(console).lines:
        if needle in line.text and line.ts_usec is not None:
            return line.ts_usec / 1e6
    return None


LITERAL_RE = re.compile(rb"[A-Za-z0-9 _:=.-]+")


def device_triggers(req: BootRequest) -> BootRequest:
    """On the icount clock a host-timed QMP NMI becomes the UART's NMI
    trigger on the same console text: QEMU's inject-nmi reaches the boot CPU
    (LINT1), so the UART aims at vCPU 0, right after the text's last byte."""
    if not (req.clock == ICOUNT_CLOCK and req.qmp_when):
        return req
    pattern, command, _ = req.qmp_when
    if command != "inject-nmi":
        raise ValueError(f"the icount clock cannot time the QMP command {command!r} "
                         f"from the host; only inject-nmi has a device trigger")
    if not LITERAL_RE.fullmatch(pattern):
        raise ValueError(f"the icount clock fires the NMI from the UART on literal "
                         f"console text; {pattern!r} is a regular expression")
    props = dict(req.uart_props, **{"nmi-pattern": pattern.decode(), "nmi-cpu": "0"})
    return replace(req, qmp_when=None, uart_props=props)


def slowness(req: BootRequest) -> float:
    """Phase timeouts are stretched this much (virtual time under -icount)."""
    return 4.0 if req.clock == ICOUNT_CLOCK else 1.0


def machine_plan(req: BootRequest, qemu: Path, kernel: Path, initrd: Path, run_dir: Path,
                 accel: str, firmware: Optional[Path] = None
                 ) -> Tuple[MachineConfig, List[Phase], Optional[Callable]]:
    """The QEMU configuration, the phases and the phase hook of one boot."""
    cfg = MachineConfig(qemu=qemu, kernel=kernel, initrd=initrd, run_dir=run_dir,
                        firmware=firmware,
                        cmdline=req.cmdline, smp=req.smp, memory_mb=req.memory_mb,
                        accel=accel, clock=req.clock,
                        icount_shift=req.icount_shift, baud_model=req.baud_model,
                        uart_props=req.uart_props, warm_reset=req.warm_reset,
                        second_uart=req.second_uart)
    slow = slowness(req)
    plan = (warm_reset_phases if req.warm_reset else
            panic_hold_phases if req.panic_hold else default_phases)
    phases = plan(req.init_timeout_s, slow)
    on_phase = None
    if req.qmp_when is not None:
        pattern, command, arguments = req.qmp_when
        phases.insert(2, Phase("qmp trigger", pattern, req.init_timeout_s * slow))

        def on_phase(m, name):
            if name == "qmp trigger":
                m.qmp.execute(command, arguments or None)
    return cfg, phases, on_phase


def time_split(prepare_s: float, host_wait_s: float, phases, finish_s: float) -> Dict:
    """Where a boot's wall time went (rig bench adds them up per test):
    finding or building the inputs and the snapshot, waiting for the host,
    starting QEMU, restoring the snapshot, the guest's own run (from the
    firmware on when booted), and checking the evidence files are whole."""
    by_phase = {p.name: p.wall_s for p in phases}
    guest = sum(w for name, w in by_phase.items() if name not in ("qemu", "restore"))
    return {name: round(s, 3) for name, s in (
        ("prepare", prepare_s), ("host_wait", host_wait_s),
        ("qemu_start", by_phase.get("qemu", 0.0)), ("restore", by_phase.get("restore", 0.0)),
        ("guest", guest), ("finish", finish_s))}


def rerun_elsewhere(req: BootRequest, live: Optional[IO], failure: "HostError",
                    run_dir: Path) -> BootResult:
    """A remote host failed during the boot: it is passed over from now on,
    and the boot runs once more on the next host of the fleet; its summary
    says so (rerun). With no host left, or for a boot that is already a
    rerun, the host's error stands."""
    backend.FAILED.add(failure.host_name)
    if req.rerun_of is not None or backend.host_for_this_worker() is None:
        raise failure
    first_line = str(failure).splitlines()[0]
    print(f"[boot] {first_line}\n[boot] running {req.name} once more on host "
          f"{backend.host_for_this_worker().name}", flush=True)
    rerun_of = {"failed_host": failure.host_name, "error": first_line,
                "failed_run_dir": str(run_dir)}
    again = boot(replace(req, rerun_of=rerun_of,
                         run_dir=Path(f"{req.run_dir}-rerun") if req.run_dir else None),
                 live=live)
    return again


def boot(req: BootRequest, live: Optional[IO] = None) -> BootResult:
    from rig.vm.accel import resolve_accel
    started = time.monotonic()
    request_check.check(req.smp, req.memory_mb, req.cmdline, {})
    rundir.check_room(req.run_dir or paths.runs_root(), req.min_free_mb)
    req = device_triggers(req)
    kernel = artifacts.kernel(req.flavor)
    request_check.check_kernel_image(kernel.path("bzImage"))
    qemu = artifacts.qemu()
    fw = firmware()
    initrd = artifacts.initramfs(req.flavor, variant=req.initramfs)
    request_check.check_memory(req.memory_mb, {
        "kernel image": kernel.path("bzImage").stat().st_size,
        "initramfs": initrd.path("initramfs").stat().st_size})
    run_dir = req.run_dir or new_run_dir(req.name, req.flavor)
    accel = resolve_accel(req.accel, qemu, kernel, initrd)
    cfg, phases, on_phase = machine_plan(
        req, qemu.path("qemu-system-x86_64"), kernel.path("bzImage"),
        initrd.path("initramfs"), run_dir, accel, Path(fw["dir"]))
    inputs = {}
    prelude = None
    restorable = req.snapshot and snapshot.why_not(req, backend.selected()) is None
    if restorable:
        snap = artifacts.Artifact(snapshot.template(
            req.flavor, cfg, {"qemu": qemu["key"], "kernel": kernel["key"],
                              "initramfs": initrd["key"], "firmware": fw["key"]},
            slowness(req),
            lock_timeout_s=req.lock_timeout_s))
        cfg, phases, prelude = snapshot.restore_plan(Path(snap["dir"]), cfg, phases)
        if live is not None:
            # The boot up to the snapshot point, as the template's console
            # printed it: the run's transcript starts with it too.
            live.write(cfg.run.console_log.read_bytes())
            live.flush()
        inputs["snapshot"] = bundle.input_entry(
            snap, "vmstate", "any boot of the same request with the snapshot option "
            "rebuilds it; the saved bytes differ from build to build, the evidence should not")
    machine = backend.make_machine(cfg, phases, live=live, on_phase=on_phase, prelude=prelude,
                                   lock_timeout_s=req.lock_timeout_s)
    rundir.make_private(run_dir)
    bundle.write(run_dir, req, cfg, machine.argv, {**inputs,
        "qemu": bundle.input_entry(qemu, "qemu-system-x86_64",
                                   bundle.rebuild_command(req.flavor, "qemu")),
        "firmware": bundle.firmware_entry(fw),
        "kernel": bundle.input_entry(kernel, "bzImage",
                                     bundle.rebuild_command(req.flavor, "kernel")),
        "initramfs": dict(bundle.input_entry(initrd, "initramfs",
                                             bundle.rebuild_command(req.flavor, "initramfs")),
                          module_sha256=initrd["outputs"].get("module_sha256")),
    })
    prepare_s = time.monotonic() - started
    try:
        with machine as m:
            result = m.run()
    except HostError as e:
        return rerun_elsewhere(req, live, e, run_dir)
    finishing = time.monotonic()
    booted = result.outcome
    missing = completeness.problems(run_dir, machine, booted)
    if missing:
        result.outcome = outcome_mod.rig_error(missing, booted)
    try:
        bundle.finish(run_dir, result.outcome.cls)
    except rundir.RunDirError as e:
        missing.append(str(e))
        result.outcome = outcome_mod.rig_error(missing, booted)
    times = time_split(prepare_s, machine.host_wait_s, result.phases,
                       time.monotonic() - finishing)
    result.summary = {
        "name": req.name,
        "flavor": req.flavor,
        "profile": bundle.run_profile(req.flavor),
        "outcome": result.outcome.to_json(),
        "phases": [vars(p) for p in result.phases],
        "wall_s": result.wall_s,
        "time_s": times,
        "guest_s": {"init_start": guest_time_of(result.console, "rig-init: start"),
                    "init_end": guest_time_of(result.console, "rig-init: end status=")},
        "accel": accel,
        "backend": backend.selected(),
        **({"libvirt_uri": machine.uri} if hasattr(machine, "uri") else {}),
        **({"host": machine.fleet_host.name} if hasattr(machine, "fleet_host") else {}),
        **({"rerun_of": req.rerun_of} if req.rerun_of else {}),
        "clock": req.clock,
        "icount_shift": req.icount_shift if req.clock == ICOUNT_CLOCK else None,
        "baud_model": req.baud_model,
        "snapshot": inputs["snapshot"]["key"] if restorable else None,
        "kernel": {"release": kernel["outputs"]["kernel_release"],
                   "source": kernel["outputs"]["source_version"],
                   "patches": kernel["outputs"]["patches"], "cache_key": kernel["key"]},
        "qemu": {"version": qemu["outputs"]["version"],
                 "debian_source": qemu["outputs"]["debian_source"], "cache_key": qemu["key"]},
        "initramfs": {"sha256": initrd["outputs"]["sha256"], "cache_key": initrd["key"]},
    }
    try:
        RunDir(run_dir).write_json(RunDir.SUMMARY, result.summary)
    except rundir.RunDirError as e:
        missing.append(str(e))
        result.outcome = outcome_mod.rig_error(missing, booted)
        result.summary["outcome"] = result.outcome.to_json()
    return result
