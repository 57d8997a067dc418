"""rig replay BUNDLE: run a recorded boot again and compare its evidence.

Only what the rig can verify is taken from the bundle (rig.tools.replay_trust):
the inputs come from the build cache under their step and key, checked, with
the recorded sha256; the boot request is rebuilt from its checked fields, and
QEMU's command line is the one the rig makes for it, which the recorded one
must match once its paths are mapped to the replay's; the replay writes only
into a new run directory of its own. A run restored from a snapshot is
replayed from the same saved VM (an input like the others). Then every
evidence file must be byte-identical, and the first difference is named: the
byte offset, and the console line or the register-log record it falls in.

--gdb starts QEMU paused with its gdb stub and no phase timeouts, so that a
developer can attach (`gdb vmlinux -ex 'target remote :PORT'`), set a
breakpoint on panic and continue to it. A restored run opens the stub once
the saved VM is loaded: the debugger starts at init's snapshot point.
"""
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from rig import bundle, config, paths, rundir
from rig.artifacts.cache import sha256_file
from rig.boot import guest_time_of, machine_plan, run_dir_path
from rig.evidence.uartlog import HEADER as UART_HEADER
from rig.evidence.uartlog import RECORD as UART_RECORD
from rig.rundir import RunDir
from rig.vm import completeness, outcome, snapshot
from rig.vm.machine import Machine
from rig.vm.phases import Phase
from rig.vm.qemu_argv import build_argv
from rig.tools import replay_trust

NO_TIMEOUT_S = 365 * 24 * 3600.0


class ReplayError(bundle.BundleError):
    """The bundle cannot be replayed (an input is missing or differs)."""


@dataclass
class FileVerdict:
    name: str
    identical: bool
    detail: str


def first_difference(name: str, old: bytes, new: bytes) -> str:
    n = min(len(old), len(new))
    at = next((i for i in range(n) if old[i] != new[i]), n)
    if at == n:
        return (f"{len(old)} bytes recorded, {len(new)} replayed: one is a prefix of the "
                f"other, first difference at byte {at}")
    where = f"first difference at byte {at}"
    if name == RunDir.CONSOLE:
        line = old.count(b"\n", 0, at) + 1

        def line_at(data: bytes) -> str:
            start = data.rfind(b"\n", 0, at) + 1
            end = data.find(b"\n", at)
            return data[start:end if end >= 0 else len(data)].decode("utf-8", "replace")
        where += (f", console line {line}:\n    recorded: {line_at(old)!r}\n"
                  f"    replayed: {line_at(new)!r}")
    elif name == RunDir.UART and at >= UART_HEADER.size:
        where += f", register-log record {(at - UART_HEADER.size) // UART_RECORD.size}"
    elif name == RunDir.UART:
        where += " (in the log header)"
    return where


def compare(recorded_dir: Path, recorded: Dict, new_dir: Path) -> List[FileVerdict]:
    out = []
    extra = tuple(n for n in bundle.SECOND_CONSOLE_EVIDENCE if n in recorded)
    for name in bundle.EVIDENCE + extra:
        old_path, new_path = recorded_dir / name, new_dir / name
        new = new_path.read_bytes() if new_path.is_file() else None
        if old_path.is_file():
            old = old_path.read_bytes()
            if recorded and recorded.get(name) and \
                    sha256_file(old_path) != recorded[name]["sha256"]:
                out.append(FileVerdict(name, False, "the bundle's copy was changed after the "
                                                    "run (sha256 differs from the record)"))
                continue
        else:
            out.append(FileVerdict(name, False, "not in the bundle"))
            continue
        if new is None:
            out.append(FileVerdict(name, False, "the replay did not write it"))
        elif old == new:
            out.append(FileVerdict(name, True, f"identical ({len(new)} bytes)"))
        else:
            out.append(FileVerdict(name, False, first_difference(name, old, new)))
    return out


def replay(where: Path, gdb_port: Optional[int] = None, live=None, out=None) -> int:
    out = out or sys.stdout
    b = bundle.load(where)
    config.set_fields(profile=replay_trust.profile_of(b))   # the kernels the run booted
    recorded_dir = Path(b["dir"])
    # Everything checked before anything is written (rig.tools.replay_trust).
    req = replay_trust.request(b)
    inputs = replay_trust.resolve_inputs(b)
    run_dir = run_dir_path(f"replay-{b.get('name')}", b["flavor"])
    rundir.check_room(run_dir.parent, rundir.DEFAULT_MIN_FREE_MB)
    cfg, phases, on_phase = machine_plan(req, inputs["qemu"], inputs["kernel"],
                                         inputs["initramfs"], run_dir,
                                         b["machine"].get("accel", "tcg"), inputs["firmware"])
    prelude, booted_cfg = None, cfg
    if "snapshot" in inputs:
        # A restored run: the same saved VM (by sha256), its logs as prefixes.
        # With --gdb its stub opens once the state is loaded.
        cfg, phases, prelude = snapshot.restore_config(inputs["snapshot"].parent, cfg, phases,
                                                       gdb_port)
    argv = build_argv(cfg)
    # Most specific first: the QMP socket may lie inside the old run directory.
    mapping = {str(b.get("qmp_socket")): str(cfg.qmp_socket)}
    mapping.update({str(b["inputs"][r].get("path")): str(p) for r, p in inputs.items()})
    mapping[str(b["run_dir"])] = str(run_dir)
    replay_trust.same_argv(b["argv"], argv, mapping)
    rundir.make_private(run_dir)
    if "snapshot" in inputs:
        snapshot.restore_files(inputs["snapshot"].parent, booted_cfg)
    if gdb_port is not None:
        if prelude is None:
            argv += ["-S", "-gdb", f"tcp:127.0.0.1:{gdb_port}"]
        phases = [Phase(p.name, p.until, NO_TIMEOUT_S, p.panic_ends_it) for p in phases]
        vmlinux = paths.kernel_build_of(inputs["kernel"]) / "vmlinux"
        print(f"[replay] QEMU starts paused with its gdb stub on 127.0.0.1:{gdb_port}; "
              f"attach with:\n  gdb {vmlinux} -ex 'target remote 127.0.0.1:{gdb_port}'\n"
              f"  (then for example: break panic, continue)", file=out, flush=True)
    print(f"[replay] {recorded_dir} -> {run_dir}", file=out, flush=True)
    if not b.get("determinism"):
        print("[replay] note: the run ran on the host's clock (no -icount): its evidence "
              "is not expected to repeat byte for byte", file=out)
    machine = Machine(cfg, phases, live=live, on_phase=on_phase, argv=argv, prelude=prelude)
    bundle.write(run_dir, req, cfg, argv, {r: dict(b["inputs"][r], path=str(p))
                                           for r, p in inputs.items()})
    with machine as m:
        result = m.run()
    missing = completeness.problems(run_dir, machine, result.outcome)
    if missing:
        result.outcome = outcome.rig_error(missing, result.outcome)
    bundle.finish(run_dir, result.outcome.cls)
    verdicts = compare(recorded_dir, b.get("evidence") or {}, run_dir)
    same = all(v.identical for v in verdicts)
    report = {"bundle": str(recorded_dir), "replay": str(run_dir),
              "outcome": {"recorded": b.get("outcome"), "replayed": result.outcome.cls},
              "guest_s_end": guest_time_of(result.console, "rig-init: end status="),
              "identical": same,
              "files": {v.name: {"identical": v.identical, "detail": v.detail}
                        for v in verdicts}}
    RunDir(run_dir).write_json(RunDir.REPLAY, report, indent=1)
    print(f"[replay] outcome: recorded {b.get('outcome')}, replayed {result.outcome.cls}",
          file=out)
    if result.outcome.cls != b.get("outcome"):
        print(f"[replay] {result.outcome.detail}", file=out)
    for v in verdicts:
        print(f"[replay] {v.name}: {v.detail}", file=out)
    print(f"[replay] {'IDENTICAL' if same else 'DIFFERENT'}: "
          f"{sum(v.identical for v in verdicts)} of {len(verdicts)} evidence files "
          f"byte-identical ({run_dir})", file=out)
    return 0 if same else 1
