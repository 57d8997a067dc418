"""Boot one flavor with the rig's artifacts and keep everything in a run directory.

A run directory holds: argv.json, cmdline.txt, console.log (the transcript,
byte for byte), side.bin (the side channel), qemu.stderr, qmp-events.jsonl and
summary.json (exit class, phase timings, versions of every input).
"""
import itertools
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Dict, Optional, Tuple

from rig import logparse, paths
from rig.build import artifacts
from rig.machine import BootResult, Machine, Phase, default_phases, warm_reset_phases
from rig.qemu_argv import MachineConfig

_counter = itertools.count()


@dataclass
class BootRequest:
    flavor: str = "patched"
    cmdline: str = ""             # extra kernel parameters, e.g. "rig.hang=1"
    smp: int = 2
    memory_mb: int = 256
    accel: str = "tcg"            # tcg, kvm or auto (kvm only after a probe boot succeeds)
    deterministic: bool = False
    icount_shift: int = 0         # -icount shift: 2^N ns of virtual time per instruction
    baud_model: bool = True
    uart_props: Dict[str, str] = field(default_factory=dict)   # e.g. an NMI trigger
    init_timeout_s: float = 60.0
    # (console regex, QMP command, arguments): once the console shows the
    # pattern, send the command, e.g. (rb"spins", "inject-nmi", {}).
    qmp_when: Optional[Tuple[bytes, str, Dict]] = None
    # The kernel panics and reboots (panic=-1); QEMU resets the machine, RAM
    # kept, and the second boot runs init again (S10's ramoops read-back).
    warm_reset: bool = False
    name: str = "boot"
    run_dir: Optional[Path] = None


def new_run_dir(name: str, flavor: str) -> Path:
    """Unique per process and call, so parallel pytest workers never collide."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-")[:60]
    d = paths.runs_root() / f"{stamp}-{safe}-{flavor}-{os.getpid()}-{next(_counter)}"
    d.mkdir(parents=True)
    return d


def guest_time_of(console: bytes, needle: str) -> Optional[float]:
    """Guest timestamp (s, virtual) of the first console line containing needle."""
    for line in logparse.parse_transcript(console).lines:
        if needle in line.text and line.ts_usec is not None:
            return line.ts_usec / 1e6
    return None


def boot(req: BootRequest, live: Optional[IO] = None) -> BootResult:
    from rig.accel import resolve_accel
    kernel = artifacts.kernel(req.flavor)
    qemu = artifacts.qemu()
    initrd = artifacts.initramfs(req.flavor)
    run_dir = req.run_dir or new_run_dir(req.name, req.flavor)
    accel = resolve_accel(req.accel, qemu, kernel, initrd)
    cfg = MachineConfig(qemu=qemu.path("qemu-system-x86_64"), kernel=kernel.path("bzImage"),
                        initrd=initrd.path("initramfs"), run_dir=run_dir, cmdline=req.cmdline,
                        smp=req.smp, memory_mb=req.memory_mb, accel=accel,
                        deterministic=req.deterministic, icount_shift=req.icount_shift,
                        baud_model=req.baud_model,
                        uart_props=req.uart_props, warm_reset=req.warm_reset)
    slow = 4.0 if req.deterministic else 1.0
    phases = (warm_reset_phases if req.warm_reset else default_phases)(req.init_timeout_s, slow)
    on_phase = None
    if req.qmp_when is not None:
        pattern, command, arguments = req.qmp_when
        phases.insert(2, Phase("qmp trigger", pattern, req.init_timeout_s * slow))

        def on_phase(m, name):
            if name == "qmp trigger":
                m.qmp.execute(command, arguments or None)
    with Machine(cfg, phases, live=live, on_phase=on_phase) as m:
        result = m.run()
    result.summary = {
        "name": req.name,
        "flavor": req.flavor,
        "outcome": result.outcome.to_json(),
        "phases": [vars(p) for p in result.phases],
        "wall_s": result.wall_s,
        "guest_s": {"init_start": guest_time_of(result.console, "rig-init: start"),
                    "init_end": guest_time_of(result.console, "rig-init: end status=")},
        "accel": accel,
        "deterministic": req.deterministic,
        "baud_model": req.baud_model,
        "kernel": {"release": kernel["outputs"]["kernel_release"],
                   "source": kernel["outputs"]["source_version"],
                   "patches": kernel["outputs"]["patches"], "cache_key": kernel["key"]},
        "qemu": {"version": qemu["outputs"]["version"],
                 "debian_source": qemu["outputs"]["debian_source"], "cache_key": qemu["key"]},
        "initramfs": {"sha256": initrd["outputs"]["sha256"], "cache_key": initrd["key"]},
    }
    (run_dir / "summary.json").write_text(json.dumps(result.summary, indent=2) + "\n")
    return result
