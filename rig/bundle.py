"""Run bundles: every run directory describes itself in bundle.json.

Written before QEMU starts (so a hung or killed run has one too) and
completed after it ends with the hashes of the evidence. It holds what a
replay needs: the boot request, the exact QEMU argv and kernel command line,
the test and scenario, and for every input (QEMU, kernel, initramfs with the
test module in it) its cache step, key, sha256 and the command that rebuilds
it. The scenarios use no random seed: a deterministic run is determined by
its inputs, its icount shift and the RTC base, all recorded here.
"""
import dataclasses
import json
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from rig import config, paths
from rig.artifacts import custom
from rig.artifacts.cache import sha256_bytes, sha256_file
from rig.rundir import RunDir
from rig.vm.qemu_argv import ICOUNT_CLOCK
from rig.faults import RigFault

FORMAT = 3          # 2: the request names its clock; 3: the firmware is an input
NAME = RunDir.BUNDLE
# The evidence files a replay must reproduce byte for byte; the second
# console's only boots with the second console UART (BootRequest.second_uart).
EVIDENCE = RunDir.EVIDENCE
SECOND_CONSOLE_EVIDENCE = RunDir.SECOND_CONSOLE_EVIDENCE
ALL_EVIDENCE = EVIDENCE + SECOND_CONSOLE_EVIDENCE


def evidence_names(run_dir: Path) -> Tuple[str, ...]:
    """The evidence files of this run: the second console's where it has one."""
    run = RunDir(run_dir)
    return EVIDENCE + tuple(n for n in SECOND_CONSOLE_EVIDENCE if run.has(n))


class BundleError(RigFault, ValueError):
    """Not a bundle, or one that cannot be replayed; the message says why."""


def rig_commit() -> Dict[str, object]:
    """The rig checkout that made the run: inputs are keyed by its files."""
    def git(*args):
        res = subprocess.run(["git", "-C", str(paths.REPO)] + list(args),
                             capture_output=True, text=True)
        return res.stdout.strip() if res.returncode == 0 else None
    return {"commit": git("rev-parse", "HEAD"),
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def input_entry(artifact, output: str, rebuild: str) -> Dict[str, str]:
    """One input file: where it is, what it is (the sha256 of the file the
    run uses: the cache checked it against its manifest, and the hash is
    kept per process), and how to get it again."""
    path = artifact.path(output)
    return {"step": artifact.get("step", "custom"), "key": artifact.get("key", ""),
            "file": artifact["outputs"][output], "path": str(path),
            "sha256": sha256_file(path), "rebuild": rebuild}


def firmware_entry(fw) -> Dict:
    """The firmware directory QEMU loads from (-L): its files' hashes, and
    one sha256 over them."""
    files = {name: sha256_file(fw.path(name)) for name in sorted(fw["outputs"])}
    return {"step": fw["step"], "key": fw["key"], "file": "", "path": fw["dir"],
            "files": files, "sha256": sha256_bytes(json.dumps(files, sort_keys=True).encode()),
            "rebuild": "any boot copies it from the system's seabios and qemu-system-data"}


def run_profile(flavor: str) -> Optional[str]:
    """The kernel profile a boot of flavor runs: none for a user's own kernel."""
    return None if flavor == custom.CUSTOM else paths.profile()


def rebuild_command(flavor: str, what: str) -> str:
    mutant = config.current().mutant
    env = f"RIG_MUTANT={mutant} " if mutant and flavor == "patched" and what != "qemu" else ""
    flavor_arg = "" if what == "qemu" else f" --flavor {flavor}"
    if what != "qemu" and paths.profile_suffix():
        flavor_arg += f" --profile {paths.profile()}"
    return f"{env}python3 -m rig build {what}{flavor_arg}"


def request_json(req) -> Dict:
    out = dataclasses.asdict(req)
    out["run_dir"] = None
    if req.qmp_when is not None:
        pattern, command, arguments = req.qmp_when
        out["qmp_when"] = [pattern.decode("latin-1"), command, arguments]
    return out


def write(run_dir: Path, req, cfg, argv: List[str], inputs: Dict[str, Dict]) -> None:
    machine = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)
               if f.name not in ("qemu", "kernel", "initrd", "run_dir", "firmware")}
    bundle = {
        "format": FORMAT,
        "name": req.name,
        "flavor": req.flavor,
        "profile": run_profile(req.flavor),
        "test": config.pytest_current_test(),
        "mutant": config.current().mutant,
        "rig": rig_commit(),
        "request": request_json(req),
        "machine": machine,
        "run_dir": str(run_dir),
        "qmp_socket": str(cfg.qmp_socket),
        "argv": argv,
        "cmdline": argv[argv.index("-append") + 1],
        "determinism": ({"icount_shift": cfg.icount_shift,
                         "rtc_base": "2000-01-01T00:00:00, clock=vm"}
                        if cfg.clock == ICOUNT_CLOCK else None),
        "inputs": inputs,
        "evidence": None,
    }
    RunDir(run_dir).write_json(NAME, bundle, indent=1)


def evidence_hashes(run_dir: Path) -> Dict[str, Optional[Dict]]:
    out, run = {}, RunDir(run_dir)
    for name in evidence_names(run_dir):
        p = run.file(name)
        out[name] = ({"sha256": sha256_file(p), "bytes": p.stat().st_size}
                     if p.is_file() else None)
    return out


def finish(run_dir: Path, outcome_cls: str) -> None:
    """Add the evidence hashes and the exit class once QEMU has ended."""
    run = RunDir(run_dir)
    bundle = run.read_json(NAME)
    bundle["evidence"] = evidence_hashes(run_dir)
    bundle["outcome"] = outcome_cls
    run.write_json(NAME, bundle, indent=1)


def load(where: Path) -> Dict:
    where = Path(where)
    path = where / NAME if where.is_dir() else where
    if not path.is_file():
        raise BundleError(f"{where}: no {NAME} (a run directory made by the rig holds one; "
                          f"runs from before bundles existed cannot be replayed)")
    try:
        bundle = json.loads(path.read_text())
    except ValueError as e:
        raise BundleError(f"{path}: not valid JSON ({e})") from None
    if bundle.get("format") != FORMAT:
        raise BundleError(f"{path}: bundle format {bundle.get('format')!r}, this rig reads "
                          f"format {FORMAT}")
    for key in ("argv", "request", "inputs", "run_dir"):
        if key not in bundle:
            raise BundleError(f"{path}: no {key!r} in it (truncated or hand-edited?)")
    bundle["dir"] = str(path.parent)
    return bundle
