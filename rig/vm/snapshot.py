"""Snapshot restore: boot once to init's snapshot point, save the VM there,
and start each scenario from the saved state instead of booting.

A template is a cache step (snapshot-FLAVOR) keyed by everything a boot fixes
before init's snapshot point: QEMU, kernel, initramfs, the machine (vCPUs,
memory, accelerator, -icount shift or none, the UART's baud model) and the
boot's own kernel parameters. The scenario's part of the command line, its
rig.* and rigprintk.* parameters, reaches init through the fw_cfg file
opt/rig/args after the restore (rig/guest/init.c, snapshot_point), and the
UART's NMI triggers through qom-set before the VM runs (the restored device
state overwrites them). So scenarios that differ only in those share a
template.

The template boot runs with rig.snapshot=1: init stops the VM by writing
the protocol's SNAPSHOT_STOP_MARKER to rig-serial's marker port (its
stop-marker property), which under -icount stops every vCPU synchronously, so the saved state does not
depend on host timing. QMP `migrate` to a file descriptor the harness
opened and passed (getfd: QEMU's sandbox forbids spawning) saves it. A
restore is a QEMU with the same machine plus `-incoming defer`;
`migrate-incoming` from a passed descriptor loads the state, `cont` runs
it. The libvirt backend restores the same way: its domain passes
-incoming defer on to QEMU, and the harness loads the state through the
rig's QMP socket. The run directory starts with the template's console.log,
uart.log and side.bin (and console2.log and uart2.log of a machine with the
second console UART), which the restored QEMU appends to: a transcript and
a register log whole from the first byte.
"""
import os
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from rig import protocol, rundir
from rig.artifacts.cache import Step, ensure, sha256_bytes, sha256_file
from rig.rundir import RunDir
from rig.vm import backend
from rig.vm.machine import VMSTATE_FD, Machine, last_lines
from rig.vm.phases import Phase, default_phases
from rig.vm.qemu_argv import ICOUNT_CLOCK, VCPU_SLICE_NS, MachineConfig
from rig.vm.qmp import QMPClient
from rig.faults import RigFault

SNAPSHOT_FLAG = "rig.snapshot=1"
SCENARIO_PARAMS = ("rig.", "rigprintk.")
# rig-serial properties the restored device state overwrites: set after the
# load, the target and offset before the properties that arm the trigger.
TRIGGER_PROPS = ("nmi-cpu", "nmi-pattern-offset", "nmi-pattern", "nmi-after-thr")
INT_PROPS = ("nmi-cpu", "nmi-pattern-offset", "nmi-after-thr")
RECIPE = "v2: init's snapshot point, stop-marker, migrate to a passed fd"
MIGRATE_TIMEOUT_S = 120.0


def prefixes(second_uart: bool) -> Tuple[str, ...]:
    """The evidence files a restore starts with: the template boot's."""
    return RunDir.EVIDENCE + (RunDir.SECOND_CONSOLE_EVIDENCE if second_uart else ())


class SnapshotError(RigFault, RuntimeError):
    """The template boot did not reach its snapshot point or could not be saved."""


def split_cmdline(cmdline: str) -> Tuple[str, str]:
    """(the boot's kernel parameters, the scenario's rig.*/rigprintk.* ones)."""
    boot, scenario = [], []
    for token in cmdline.split():
        (scenario if token.startswith(SCENARIO_PARAMS) else boot).append(token)
    return " ".join(boot), " ".join(scenario)


def why_not(req, backend_name: str) -> Optional[str]:
    """Why this boot cannot start from a snapshot, or None if it can. Both
    backends restore: the libvirt backend's QEMU takes the same -incoming
    defer and loads the state through the rig's QMP socket (a local host)."""
    if backend_name not in backend.BACKENDS:
        return f"the {backend_name} backend cannot load a saved state"
    if req.warm_reset:
        return "a warm reset would boot the restoring QEMU's -kernel/-append again"
    if req.initramfs:
        return f"the {req.initramfs} initramfs boots its own way"
    if req.accel != "tcg":
        return "templates are made under TCG"
    return None


def trigger_props(props: Dict[str, str]) -> Dict[str, str]:
    return {k: v for k, v in props.items() if k in TRIGGER_PROPS}


def machine_props(props: Dict[str, str]) -> Dict[str, str]:
    """The UART properties of the template's machine (the others are triggers)."""
    fixed = {k: v for k, v in props.items() if k not in TRIGGER_PROPS}
    fixed["stop-marker"] = str(protocol.SNAPSHOT_STOP_MARKER)
    return fixed


def template_step(flavor: str, cfg: MachineConfig, inputs: Dict[str, str]) -> Step:
    """inputs: the cache keys of qemu, kernel and initramfs."""
    boot_cmdline, _ = split_cmdline(cfg.cmdline)
    return Step(f"snapshot-{flavor}", dict(
        inputs,
        machine=f"smp {cfg.smp}, {cfg.memory_mb} MB, {cfg.accel}, " +
        (f"icount shift {cfg.icount_shift}, vCPU slice {VCPU_SLICE_NS} ns"
         if cfg.clock == ICOUNT_CLOCK
         else "no icount") +
        f", baud model {'on' if cfg.baud_model else 'off'}" +
        (", second console UART" if cfg.second_uart else ""),
        uart=",".join(f"{k}={v}" for k, v in sorted(machine_props(cfg.uart_props).items())),
        cmdline=boot_cmdline,
        recipe=sha256_bytes(RECIPE.encode())[:16],
    ))


def template_config(cfg: MachineConfig, run_dir: Path, args_file: Path) -> MachineConfig:
    """The machine both the template boot and every restore of it run: the
    same devices (fw_cfg file included), the same -append."""
    boot_cmdline, _ = split_cmdline(cfg.cmdline)
    return replace(cfg, run_dir=run_dir, cmdline=f"{boot_cmdline} {SNAPSHOT_FLAG}".strip(),
                   uart_props=machine_props(cfg.uart_props), fw_cfg_args=str(args_file))


def wait_for_stop(m: Machine, timeout_s: float) -> None:
    """Until QEMU reports the guest's stop (QMP STOP), QEMU exits or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        m.qmp.poll()
        if any(ev.get("event") == "STOP" for ev in m.qmp.events):
            return
        if not m.child.isalive():
            raise SnapshotError("QEMU exited before init's snapshot point; last console "
                                f"lines:\n{last_lines(m.cfg.run.console_log)}")
        time.sleep(0.02)
    raise SnapshotError(f"the template boot did not reach init's snapshot point within "
                        f"{timeout_s:.0f} s; last console lines:\n"
                        f"{last_lines(m.cfg.run.console_log)}")


def save(m: Machine, vmstate: Path) -> None:
    """QMP migrate to a file; the VM is paused, so the state is the stop's."""
    tmp = vmstate.with_suffix(".tmp")
    m.qmp.execute("migrate-set-parameters", {"max-bandwidth": 1 << 40})
    m.pass_fd(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    m.qmp.execute("migrate", {"uri": f"fd:{VMSTATE_FD}"})
    deadline = time.monotonic() + MIGRATE_TIMEOUT_S
    while True:
        status = (m.qmp.execute("query-migrate") or {}).get("status")
        if status == "completed":
            break
        if status in ("failed", "cancelled") or time.monotonic() > deadline:
            raise SnapshotError(f"saving the VM to {tmp}: migration {status or 'timed out'}")
        time.sleep(0.05)
    tmp.replace(vmstate)


def build_template(out: Path, cfg: MachineConfig, slow: float,
                   lock_timeout_s: Optional[float] = None) -> dict:
    """Boot cfg's machine to init's snapshot point and save it into out."""
    boot_dir = out / "boot"
    args = out / "template-args.txt"
    boot_dir.mkdir(parents=True)
    args.write_text("rig.template=1\n")
    tcfg = template_config(cfg, boot_dir, args)
    # Wait for the stop itself, not for console lines: a boot with a quiet
    # console (S17's loglevel=4) prints neither the banner nor init's lines.
    timeout_s = sum(p.timeout_s for p in default_phases(slow=slow)[:2])
    t0 = time.monotonic()
    with Machine(tcfg, [], lock_timeout_s=lock_timeout_s) as m:
        m.qmp = QMPClient(str(tcfg.qmp_socket))
        m.qmp.connect(timeout=15.0)
        wait_for_stop(m, timeout_s)
        stopped = time.monotonic() - t0
        save(m, out / "vmstate")
    evidence = prefixes(cfg.second_uart)
    for name in evidence:
        src = boot_dir / name
        shutil.copyfile(src, out / name) if src.exists() else (out / name).write_bytes(b"")
    return {"vmstate": "vmstate", "vmstate_sha256": sha256_file(out / "vmstate"),
            "vmstate_bytes": (out / "vmstate").stat().st_size,
            "cmdline": tcfg.cmdline, "boot_to_stop_s": round(stopped, 3),
            **{name: name for name in evidence}}


def template(flavor: str, cfg: MachineConfig, inputs: Dict[str, str], slow: float,
             lock_timeout_s: Optional[float] = None) -> dict:
    """The template for cfg's machine, built on a cache miss (waiting for the
    host lock at most lock_timeout_s, like the boot that needs it)."""
    step = template_step(flavor, cfg, inputs)
    manifest = ensure(step, lambda out: build_template(out, cfg, slow, lock_timeout_s))
    manifest["dir"] = str(step.dir)
    return manifest


def restore_prelude(vmstate: Path, triggers: Dict[str, str],
                    gdb_port: Optional[int] = None) -> Callable[[Machine], None]:
    """Load the saved state into the waiting QEMU, arm the triggers, run;
    with gdb_port, open the gdb stub there instead and leave the VM paused
    for gdb's `continue` (a stub that listened from QEMU's start would let a
    debugger in before the state is loaded)."""
    def prelude(m: Machine) -> None:
        m.load_state(vmstate)
        for prop in TRIGGER_PROPS:
            if prop in triggers:
                value = int(triggers[prop]) if prop in INT_PROPS else triggers[prop]
                m.qmp.execute("qom-set", {"path": m.console_uart_qom, "property": prop,
                                          "value": value})
        if gdb_port is None:
            m.qmp.execute("cont")
        else:
            m.qmp.execute("human-monitor-command",
                          {"command-line": f"gdbserver tcp:127.0.0.1:{gdb_port}"})
    return prelude


def restore_plan(snap_dir: Path, cfg: MachineConfig, phases: List[Phase],
                 gdb_port: Optional[int] = None
                 ) -> Tuple[MachineConfig, List[Phase], Callable[[Machine], None]]:
    """cfg, phases and prelude of a boot that restores the template in
    snap_dir, and its run directory made ready for it (restore_files)."""
    planned = restore_config(snap_dir, cfg, phases, gdb_port)
    restore_files(snap_dir, cfg)
    return planned


def restore_config(snap_dir: Path, cfg: MachineConfig, phases: List[Phase],
                   gdb_port: Optional[int] = None
                   ) -> Tuple[MachineConfig, List[Phase], Callable[[Machine], None]]:
    """The plan alone, nothing written: init gets the scenario's parameters
    from fw_cfg, and the boot's phases start at init (with gdb_port, once a
    debugger continues the loaded VM)."""
    args = RunDir(cfg.run_dir).file(RunDir.SNAPSHOT_ARGS)
    rcfg = replace(template_config(cfg, cfg.run_dir, args), restore=str(snap_dir / "vmstate"))
    rest = [p for p in phases if p.name not in ("firmware", "kernel")]
    return rcfg, rest, restore_prelude(snap_dir / "vmstate", trigger_props(cfg.uart_props),
                                       gdb_port)


def restore_files(snap_dir: Path, cfg: MachineConfig) -> None:
    """The run directory starts with the template's evidence (in the run
    directory's modes, whatever the cache's) and holds the scenario's
    parameters for init."""
    run_dir = rundir.make_private(cfg.run_dir)
    for name in prefixes(cfg.second_uart):
        try:
            rundir.copy_in(snap_dir / name, RunDir(run_dir).file(name))
        except OSError as e:
            raise rundir.RunDirError(
                f"cannot copy the snapshot's {name} into {run_dir}: {e.strerror}; "
                f"{rundir.room(run_dir)}") from None
    _, scenario = split_cmdline(cfg.cmdline)
    RunDir(run_dir).write_text(RunDir.SNAPSHOT_ARGS, scenario + "\n")
