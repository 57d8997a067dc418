"""Helpers shared by the tests that boot real kernels."""
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from rig import config, paths
from rig.boot import BootRequest, BootResult, boot, new_run_dir
from rig.tools.junit import verdicts


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def console_has(run_dir: Path, text: bytes) -> bool:
    log = run_dir / "console.log"
    return log.exists() and text in log.read_bytes()


def process_gone(pid: int) -> bool:
    """True when pid is not running (gone, or a zombie nobody reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


# A boot waits for the host lock (rig/vm/hostshare.py) before QEMU starts: up to
# a whole real-time scenario or libvirt boot of another worker. Bounds on the
# guest's progress start when QEMU does, never before.
HOST_LOCK_WAIT_S = 1800
HANG_STEP_S = 60        # QEMU start to rig-init's hang step


def wait_for_qemu(runs: Path) -> Path:
    """Wait until the one boot under runs/ has started QEMU; its run directory."""
    wait_for(lambda: any(runs.glob("*/qemu.pid")), HOST_LOCK_WAIT_S,
             f"a boot under {runs} to start QEMU (the host lock)")
    return next(runs.glob("*/qemu.pid")).parent


def wait_for_hang_step_of(run_dir: Path) -> int:
    """Wait until the boot in run_dir started QEMU and reached rig-init's hang
    step; its QEMU pid."""
    wait_for(lambda: (run_dir / "qemu.pid").exists(), HOST_LOCK_WAIT_S,
             f"QEMU to start in {run_dir} (the host lock)")
    wait_for(lambda: console_has(run_dir, b"step hang"), HANG_STEP_S,
             f"QEMU to reach the hang step ({run_dir})")
    return int((run_dir / "qemu.pid").read_text())


def wait_for_hang_step(runs: Path) -> int:
    """Wait until the one boot under runs/ reached rig-init's hang step; its QEMU pid."""
    return wait_for_hang_step_of(wait_for_qemu(runs))


def boot_and_signal_qemu(name: str, flavor: str, sig: int, snapshot: bool = False,
                         clock: str = "host") -> BootResult:
    """Boot (or restore, with snapshot) into rig-init's hang step, then send
    QEMU sig from outside the harness."""
    run_dir = new_run_dir(name, flavor)
    t = threading.Thread(target=lambda: os.kill(wait_for_hang_step_of(run_dir), sig),
                         daemon=True)
    t.start()
    res = boot(BootRequest(flavor=flavor, cmdline="rig.hang=1", init_timeout_s=HANG_STEP_S,
                           run_dir=run_dir, snapshot=snapshot, clock=clock))
    t.join(5)
    return res


def run_suite(tmp_path, args):
    """pytest in a subprocess with its own run directory root; its verdicts."""
    junit = tmp_path / "junit.xml"
    env = dict(os.environ, RIG_RUNS=str(tmp_path / "runs"))
    env.pop(config.VARIABLES["custom_kernel"], None)
    env.pop(config.VARIABLES["custom_build"], None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--keep-runs", f"--junitxml={junit}"] + args,
                          cwd=paths.REPO, env=env, capture_output=True, text=True)
    assert junit.is_file(), f"pytest did not run:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
    return verdicts(junit), proc


# One boot of each exit class, through a libvirt backend: (kernel parameters, class).
EXIT_CLASS_BOOTS = [("rig.steps=kmsg", "clean"),
                    ("rig.panic=1", "panic"),
                    # no second UART for the module's console
                    ("rig.steps=run rigprintk.second_console=early", "guest-error"),
                    ("rig.hang=1", "hang")]


def fleet_workdir(tmp_path_factory) -> Path:
    """A directory for test hosts (rig.fleet.netns_hosts); skips, saying
    why, where this machine cannot make them."""
    import pytest
    from rig.fleet import netns_hosts
    why = netns_hosts.why_not()
    if why:
        pytest.skip(why)
    return tmp_path_factory.mktemp("fleet")
