"""The harness on real boots: every way a run can end is named, and no QEMU survives.

These boot the vanilla kernel (any flavor would do) with rig-init steps that
hang, panic or fail on purpose.
"""
import os
import signal
import subprocess
import sys

import pytest

from rig import paths
from rig.boot import BootRequest, boot
from rig.tests.helpers import boot_and_signal_qemu, process_gone, wait_for, wait_for_hang_step

pytestmark = pytest.mark.boots
FLAVOR = "vanilla"
# The exit classes do not depend on how the guest got to init: these runs
# start from init's snapshot (the boot itself is S1's and test_snapshot's).
# Nor on the clock: those that wait for no timeout run on the icount clock,
# which shares the host, instead of holding it alone on the host's.


def test_hang_is_reported_with_its_phase_and_last_console_lines():
    # On the icount clock the phase timeouts stretch by rig.boot.slowness:
    # 1 s of init timeout is 4 s of wall time.
    res = boot(BootRequest(flavor=FLAVOR, cmdline="rig.hang=1", init_timeout_s=1,
                           clock="icount", name="lifecycle-hang", snapshot=True))
    took = res.wall_s       # from QEMU's start: not the wait for the host lock
    assert res.outcome.cls == "hang", res.outcome.detail
    assert res.outcome.phase == "init"
    assert "guest hung in phase init" in res.outcome.detail
    assert "rig-init: step hang: stopping here on purpose" in res.outcome.detail
    # Init sleeps, so both vCPUs idle: the stacks, walked over QMP, say so.
    # (A sample may catch a vCPU in a timer interrupt: the report quotes the
    # last one, and the file has them all.)
    assert "vCPU 0: " in res.outcome.detail and "vCPU 1: " in res.outcome.detail, \
        res.outcome.detail
    stacks = (res.run_dir / "vcpu-stacks.txt").read_text().splitlines()
    for cpu in (0, 1):
        assert any(line.startswith(f"vCPU {cpu}: default_idle+") for line in stacks), \
            f"vCPU {cpu} idle in no sample:\n" + "\n".join(stacks)
    assert took < 4 + 15, f"hang reported only after {took:.1f} s"
    ended = {p.name: p.ended_by for p in res.phases}
    assert ended["init"] == "timeout" and ended["exit"] == "skipped"


def test_panic_is_its_own_class():
    res = boot(BootRequest(flavor=FLAVOR, cmdline="rig.panic=1", name="lifecycle-panic",
                           clock="icount", snapshot=True))
    assert res.outcome.cls == "panic", res.outcome.detail
    assert "GUEST_PANICKED" in res.outcome.events
    assert b"Kernel panic - not syncing" in res.console


def test_failed_step_is_a_guest_error_that_names_the_step_and_why():
    # The module's run fails: its second console has no UART on this machine.
    res = boot(BootRequest(flavor=FLAVOR, cmdline="rig.steps=kmsg,run "
                           "rigprintk.second_console=early", name="lifecycle-fail",
                           clock="icount", snapshot=True))
    assert res.outcome.cls == "guest-error", res.outcome.detail
    assert res.outcome.detail.startswith("init reported: step failed: "), res.outcome.detail
    assert res.outcome.detail.endswith("rig-init: step run: /sys/module/rigprintk/parameters/"
                                       "run: No such device; rig-init: step run failed"), \
        res.outcome.detail


def test_qemu_dying_by_a_signal_is_a_qemu_crash():
    res = boot_and_signal_qemu("lifecycle-crash", FLAVOR, signal.SIGSEGV, snapshot=True,
                               clock="icount")
    assert res.outcome.cls == "qemu-crash", res.outcome.detail
    assert res.outcome.signal == "SIGSEGV"


def like_a_terminal():
    """SIGINT as in a terminal's foreground job. A background job of a
    non-interactive shell (a CI runner's `make test &`) inherits SIGINT
    ignored, and Python then leaves it ignored: Ctrl-C cannot reach it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT],
                         ids=["SIGKILL", "SIGTERM", "SIGINT"])
def test_killing_the_harness_mid_boot_leaves_no_qemu(tmp_path, sig):
    # PYTHONFAULTHANDLER: a harness stuck after the signal is aborted, and its
    # stderr shows where each thread was.
    env = dict(os.environ, RIG_RUNS=str(tmp_path / "runs"), PYTHONFAULTHANDLER="1")
    stderr_path = tmp_path / "harness.stderr"
    with open(stderr_path, "wb") as stderr:
        harness = subprocess.Popen([sys.executable, "-m", "rig", "boot", "--flavor", FLAVOR,
                                    "--cmdline", "rig.hang=1", "--init-timeout", "120",
                                    "--clock", "icount", "--quiet"],
                                   cwd=paths.REPO, env=env, stdout=subprocess.DEVNULL,
                                   stderr=stderr, preexec_fn=like_a_terminal)
    try:
        qemu_pid = wait_for_hang_step(tmp_path / "runs")
        assert not process_gone(qemu_pid)
        harness.send_signal(sig)
        try:
            harness.wait(timeout=20)
        except subprocess.TimeoutExpired:
            harness.send_signal(signal.SIGABRT)
            harness.wait(timeout=10)
            raise AssertionError(f"the harness still ran 20 s after {sig!r}; its stderr:\n"
                                 f"{stderr_path.read_text(errors='replace')[-4000:]}") from None
        wait_for(lambda: process_gone(qemu_pid), 10, f"QEMU pid {qemu_pid} to go after {sig!r}")
    finally:
        if harness.poll() is None:
            harness.kill()


def test_sigterm_ends_a_pytest_session_mid_scenario_and_leaves_no_qemu(tmp_path):
    # A CI runner that times out sends SIGTERM: the whole session must stop
    # (not only the current test) and the QEMU of the running boot must go.
    test_file = tmp_path / "test_hangs.py"
    test_file.write_text(
        "from rig.boot import BootRequest, boot\n"
        "def test_hang():\n"
        f"    boot(BootRequest(flavor={FLAVOR!r}, cmdline='rig.hang=1', init_timeout_s=120,\n"
        "                     clock='icount', snapshot=True, name='sigterm-session'))\n"
        "def test_after():\n"
        "    pass\n")
    runs = tmp_path / "runs"
    env = dict(os.environ, RIG_RUNS=str(runs))
    session = subprocess.Popen([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider",
                                "-p", "rig.pytest_plugin", "--rootdir", str(tmp_path),
                                str(test_file)],
                               cwd=paths.REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
    try:
        qemu_pid = wait_for_hang_step(runs)
        session.send_signal(signal.SIGTERM)
        out, _ = session.communicate(timeout=30)
        wait_for(lambda: process_gone(qemu_pid), 10, f"QEMU pid {qemu_pid} to go after SIGTERM")
        text = out.decode(errors="replace")
        assert "test_after" not in text, f"the session went on after SIGTERM:\n{text}"
        assert "KeyboardInterrupt" in text, text
    finally:
        if session.poll() is None:
            session.kill()
