"""Accelerator choice: TCG unless a KVM probe boot has been seen to work here.

KVM is present on these machines but nested guests do not boot, so the rig
never assumes it: `--accel kvm` or `auto` first boots the kernel once under
KVM with short timeouts and remembers the answer per QEMU, kernel and host.
"""
import json
import os
import platform
import tempfile
from pathlib import Path

from rig import paths
from rig.artifacts.cache import sha256_bytes
from rig.artifacts.runner import BuildError

PROBE_TIMEOUT_S = 20.0


def _probe_file(qemu, kernel, initrd) -> Path:
    key = sha256_bytes(f"{qemu['key']} {kernel['key']} {initrd['key']} "
                       f"{platform.release()}".encode())[:16]
    return paths.cache_root() / "kvm-probe" / f"{key}.json"


def probe_kvm(qemu, kernel, initrd) -> dict:
    from rig.vm.machine import Machine
    from rig.vm.phases import Phase, default_phases
    from rig.vm.qemu_argv import MachineConfig
    cached = _probe_file(qemu, kernel, initrd)
    if cached.is_file():
        return json.loads(cached.read_text())
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        verdict = {"ok": False, "why": "/dev/kvm is missing or not accessible"}
    else:
        with tempfile.TemporaryDirectory(prefix="rig-kvm-probe-") as tmp:
            cfg = MachineConfig(qemu=qemu.path("qemu-system-x86_64"),
                                kernel=kernel.path("bzImage"), initrd=initrd.path("initramfs"),
                                run_dir=Path(tmp), accel="kvm")
            phases = [Phase(p.name, p.until, min(p.timeout_s, PROBE_TIMEOUT_S))
                      for p in default_phases()]
            with Machine(cfg, phases) as m:
                res = m.run()
            stderr = (Path(tmp) / "qemu.stderr").read_text(errors="replace").strip()
            why = f"probe boot under KVM: {res.outcome.cls}, {res.outcome.detail.split(';')[0]}"
            if stderr:
                why += f"; QEMU said: {stderr.splitlines()[-1][:200]}"
            verdict = {"ok": res.outcome.cls == "clean", "why": why}
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(verdict) + "\n")
    return verdict


def resolve_accel(requested: str, qemu, kernel, initrd) -> str:
    if requested == "tcg":
        return "tcg"
    if requested not in ("kvm", "auto"):
        raise BuildError(f"--accel must be tcg, kvm or auto, not {requested!r}")
    verdict = probe_kvm(qemu, kernel, initrd)
    if verdict["ok"]:
        return "kvm"
    if requested == "kvm":
        raise BuildError(f"KVM requested but it does not work here: {verdict['why']}; "
                         "use --accel tcg (the default)")
    print(f"[accel] using TCG: {verdict['why']}", flush=True)
    return "tcg"
