"""Faults of the rig's own world, as a user meets them: bad input is refused
with a named error (exit 2) before anything is built or started, and no
fault of the host (a full disk, a lock someone else holds, a QEMU that dies
at start) gives a clean run or a PASS. Each row asserts the exit code or the
run's class and the first line of the message."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rig import config, paths, rundir
from rig.boot import BootRequest, boot
from rig.evidence import uartlog
from rig.vm import hostshare

NOT_A_KERNEL = os.urandom(4096)


def rig_boot(*args, env=None, cwd=paths.REPO, timeout=120):
    """`python3 -m rig boot --quiet ARGS`: its exit code and its output."""
    proc = subprocess.run([sys.executable, "-m", "rig", "boot", "--quiet", *args], cwd=cwd,
                          env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def first_error(output: str) -> str:
    return next((ln for ln in output.splitlines() if ln.startswith("error: ")), "(none)")


# args, the first line of the message (a regular expression)
BAD_INPUT = {
    "no vCPUs": (["--smp", "0"], r"error: bad boot request: --smp 0: vCPUs from 1 to 64"),
    "too many vCPUs": (["--smp", "65"], r"error: bad boot request: --smp 65: vCPUs from 1 "),
    "too little memory": (["--memory", "16"],
                          r"error: bad boot request: --memory 16: this boot needs at least "
                          r"24 MiB before its images"),
    "unknown step": (["--cmdline", "rig.steps=kmsg,bogus"],
                     r"error: bad boot request: rig.steps=kmsg,bogus: no step 'bogus'; the "
                     r"steps are: kmsg, hang, panic"),
    "a step that sends a section twice": (["--cmdline", "rig.steps=kmsg,kmsg"],
                                          r"error: bad boot request: rig.steps=kmsg,kmsg: "
                                          r"step 'kmsg' twice; it sends a side-channel "
                                          r"section, which a run holds once"),
    "unknown init parameter": (["--cmdline", "rig.stepz=kmsg"],
                               r"error: bad boot request: rig.stepz: rig-init reads no such "
                               r"parameter; it reads: "),
    "module parameter out of its type": (["--cmdline", "rigprintk.flood_count=-1"],
                                         r"error: bad boot request: rigprintk.flood_count=-1: "
                                         r"a uint from 0 to 4294967295"),
    "unknown module parameter": (["--cmdline", "rigprintk.flood=9"],
                                 r"error: bad boot request: rigprintk.flood: the test module "
                                 r"has no such parameter; it has: "),
    "module choice": (["--cmdline", "rigprintk.crash=reboot"],
                      r"error: bad boot request: rigprintk.crash=reboot: one of none, "
                      r"panic-task, "),
    "CPU mask beyond the machine": (["--cmdline", "rigprintk.nmi_cpus=0x4"],
                                    r"error: bad boot request: rigprintk.nmi_cpus=0x4: a mask "
                                    r"of CPUs 0 to 1 \(below 0x4; 2 vCPUs\)"),
    "loglevel": (["--cmdline", "rigprintk.nmi_level=8"],
                 r"error: bad boot request: rigprintk.nmi_level=8: a loglevel from 0"),
    "missing kernel image": (["--kernel", "/nonexistent/bzImage"],
                             r"error: kernel image /nonexistent/bzImage: no such file$"),
    "empty kernel image": (["--kernel", "{tmp}/empty/bzImage"],
                           r"error: kernel image .*/empty/bzImage: empty file$"),
    "random bytes as a kernel": (["--kernel", "{tmp}/random/bzImage"],
                                 r"error: kernel image .*/random/bzImage: not a bzImage "
                                 r"\(4096 bytes without the x86 boot setup header"),
    "no room for the evidence": (["--min-free", str(2**40)],
                                 r"error: .*: [\d.]+ [KMG]B free on its filesystem; a boot "
                                 r"needs at least 1099511627776 MiB for its evidence"),
}


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_is_refused_by_name_before_anything_is_built(case, tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "bzImage").write_bytes(b"")
    (tmp_path / "random").mkdir()
    (tmp_path / "random" / "bzImage").write_bytes(NOT_A_KERNEL)
    args, message = BAD_INPUT[case]
    rc, out = rig_boot(*[a.format(tmp=tmp_path) for a in args],
                       env={"RIG_RUNS": str(tmp_path / "runs")})
    assert rc == 2 and re.match(message, first_error(out)), out[-2000:]
    # Nothing was built, started or written.
    assert not re.search(r"^\[(module|initramfs|kernel|qemu)[-\w]*\] ", out, re.M), out
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_comma_in_the_runs_directory_is_refused_by_name(tmp_path):
    """QEMU reads ',' as the end of an option's value: such a run once ended
    as a qemu-crash, exit 1, a kernel verdict."""
    rc, out = rig_boot(env={"RIG_RUNS": str(tmp_path / "a,b")})
    assert rc == 2 and re.match(rf"error: {re.escape(str(tmp_path))}/a,b: a comma in the runs "
                                r"directory's path would end a QEMU option", first_error(out)), out
    assert not (tmp_path / "a,b").exists()


@pytest.mark.boots
def test_spaces_and_newlines_in_the_runs_directory_work(tmp_path):
    runs = tmp_path / "with space" / "and\nnewline"
    rc, out = rig_boot("--clock", "icount", "--cmdline", "rig.steps=kmsg",
                       env={"RIG_RUNS": str(runs)})
    assert rc == 0 and "[verdict] PASS: 5 of 5" in out, out
    (run,) = runs.iterdir()
    assert (run / "console.log").stat().st_size and (run / "summary.json").is_file()


@pytest.mark.boots
def test_a_lock_someone_holds_is_named_with_its_holder_and_the_wait_can_end(tmp_path):
    lock = tmp_path / "host.lock"
    holder = subprocess.Popen([sys.executable, "-c",
                               "import fcntl, os, sys, time\n"
                               f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)\n"
                               "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True)\n"
                               "time.sleep(600)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        rc, out = rig_boot("--no-baud-model", "--lock-timeout", "1",
                           env={config.VARIABLES["host_lock"]: str(lock),
                                "RIG_RUNS": str(tmp_path / "runs")})
    finally:
        holder.kill()
        holder.wait()
    assert rc == 2, out[-2000:]
    assert re.match(rf"error: host lock {re.escape(str(lock))} not free after 1 s \(.* needs "
                    rf"it alone\); held by pid {holder.pid} \({re.escape(sys.executable)} -c ",
                    first_error(out)), out[-2000:]


def test_the_host_lock_is_private_and_never_followed_through_a_symlink(tmp_path, monkeypatch):
    monkeypatch.delenv(config.VARIABLES["host_lock"], raising=False)
    with hostshare.hold(alone=False, what="t"):
        path = hostshare.lock_path()
        assert path.parent == rundir.runtime_dir()
        assert oct(path.stat().st_mode & 0o777) == "0o600"
        assert oct(path.parent.stat().st_mode & 0o777) == "0o700"
    planted = tmp_path / "planted.lock"
    planted.symlink_to(tmp_path / "victim")
    monkeypatch.setenv(config.VARIABLES["host_lock"], str(planted))
    with pytest.raises(rundir.RunDirError, match=r"host lock .*planted.lock: Too many levels "
                                                 r"of symbolic links \(a symlink there is "
                                                 r"refused: remove it\)"):
        with hostshare.hold(alone=True):
            pass
    assert not (tmp_path / "victim").exists()


def as_nobody(code: str) -> subprocess.CompletedProcess:
    """Run Python as the unprivileged user nobody (needs root to switch)."""
    if os.geteuid() != 0:
        pytest.skip("switching to the user nobody needs root")
    return subprocess.run(["runuser", "-u", "nobody", "--", sys.executable, "-c", code],
                          capture_output=True, text=True, cwd="/")


def test_another_user_can_neither_take_nor_hold_the_host_lock(monkeypatch):
    monkeypatch.delenv(config.VARIABLES["host_lock"], raising=False)
    with hostshare.hold(alone=False):
        path = hostshare.lock_path()
    res = as_nobody(f"open({str(path)!r})")
    assert res.returncode == 1 and "PermissionError" in res.stderr, res.stderr


def run_machine(tmp_path, cmdline: str, on_phase=None):
    """A boot of the patched kernel straight through rig.vm.machine, without
    boot()'s checks of the request (to give the guest what they refuse)."""
    from rig.boot import machine_plan
    from rig.artifacts import built as artifacts
    from rig.vm.machine import Machine
    kernel, qemu = artifacts.kernel("patched"), artifacts.qemu()
    initrd = artifacts.initramfs("patched")
    cfg, phases, _ = machine_plan(BootRequest(cmdline=cmdline), qemu.path("qemu-system-x86_64"),
                                  kernel.path("bzImage"), initrd.path("initramfs"),
                                  rundir.make_private(tmp_path / "run"), "tcg")
    with Machine(cfg, phases, on_phase=on_phase) as m:
        return m.run()


@pytest.mark.boots
def test_run_directory_and_qemu_files_are_private_whatever_the_umask(tmp_path):
    """A real boot under umask 000: the run directory 0700, QEMU's files 0600,
    the QMP socket out of another user's reach while QEMU runs, and QEMU in
    its seccomp sandbox."""
    seen = {}

    def look(m, phase):
        if phase != "kernel":
            return
        run = m.cfg.run_dir
        seen["modes"] = {p.name: oct(p.stat().st_mode & 0o777)
                         for p in [run, *run.iterdir()] if p.name in
                         (run.name, "console.log", "uart.log", "side.bin", "qmp.sock",
                          "qemu.stderr")}
        status = Path(f"/proc/{m.child.pid}/status").read_text()
        seen["seccomp"] = re.search(r"^Seccomp:\s+(\d+)", status, re.M).group(1)
        seen["nobody"] = as_nobody(
            "import socket; s = socket.socket(socket.AF_UNIX)\n"
            f"s.connect({str(m.cfg.qmp_socket)!r})")
    old = os.umask(0)
    try:
        result = run_machine(tmp_path, "rig.steps=kmsg", on_phase=look)
    finally:
        os.umask(old)
    assert result.outcome.cls == "clean", result.outcome.detail
    assert seen["modes"] == {"run": "0o700", "console.log": "0o600", "uart.log": "0o600",
                             "side.bin": "0o600", "qmp.sock": "0o600",
                             "qemu.stderr": "0o600"}, seen
    assert seen["seccomp"] == "2", "QEMU runs without its seccomp filter (-sandbox on)"
    assert seen["nobody"].returncode == 1 and "PermissionError" in seen["nobody"].stderr, \
        seen["nobody"].stderr


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 256 KiB tmpfs: the evidence of a plain boot does not fit in it."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", str(mnt)],
                   check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.boots
def test_a_disk_that_fills_during_the_run_is_a_rig_error_never_clean(small_tmpfs):
    res = boot(BootRequest(name="full", cmdline="rig.steps=kmsg", run_dir=small_tmpfs / "run",
                           min_free_mb=0))
    out = res.outcome
    assert out.cls == "rig-error", (out.cls, out.detail)
    first = out.detail.splitlines()[0]
    assert first.startswith("evidence incomplete: "), first
    assert re.search(r"uart\.log holds \d+ of the \d+ records QEMU logged: QEMU could not "
                     r"write \d+ \(ENOSPC: No space left on device\)", first), first
    # What it did write is kept, whole up to where the disk ran out.
    log = uartlog.read(small_tmpfs / "run" / "uart.log")
    assert log.records and log.header.lost > 0
    assert "the boot itself ended clean" in out.detail


@pytest.mark.boots
def test_rig_boot_gives_no_verdict_on_a_run_the_disk_cut_short(small_tmpfs):
    # Booted, not restored: the boot itself must meet the full disk (a restore
    # would be refused earlier, copying the template's evidence).
    rc, out = rig_boot("--min-free", "0", "--snapshot", "off",
                       env={"RIG_RUNS": str(small_tmpfs / "runs")})
    outcome = next(ln for ln in out.splitlines() if ln.startswith("[boot] outcome: "))
    assert rc == 3 and outcome.startswith("[boot] outcome: rig-error: evidence incomplete: "), out
    assert "[verdict] NONE: the run's evidence is incomplete" in out
    assert "[verdict] PASS" not in out and "[verdict] FAIL" not in out


@pytest.mark.boots
def test_a_full_disk_is_refused_before_the_boot(small_tmpfs):
    filler = small_tmpfs / "filler"
    subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True)
    rc, out = rig_boot("--no-baud-model", env={"RIG_RUNS": str(small_tmpfs / "runs")})
    assert rc == 2 and re.match(rf"error: {re.escape(str(small_tmpfs))}/runs: 0 bytes free on "
                                r"its filesystem; a boot needs at least 64 MiB", first_error(out)), out


@pytest.mark.boots
def test_a_qemu_that_dies_at_start_up_is_reported_at_once_with_its_stderr(tmp_path):
    res = boot(BootRequest(name="qemu-dies", run_dir=tmp_path / "run",
                           uart_props={"no-such-property": "1"}))
    assert res.outcome.cls == "qemu-crash", res.outcome.detail
    # Seen at once, by its exit or its closed QMP socket, not by a QMP timeout.
    assert res.phases[0].ended_by in (
        "failed: QEMU exited during start-up, before its QMP socket was up",
        "failed: QEMU closed the QMP socket"), res.phases
    assert "Property 'rig-serial.no-such-property' not found" in res.outcome.detail


@pytest.mark.boots
def test_a_module_that_refuses_to_load_is_a_guest_error_with_its_reason(tmp_path):
    """A parameter the harness would refuse, given to the machine directly:
    the module does not load, init says so, still lets the console finish,
    and the outcome names the kernel's own line."""
    res = run_machine(tmp_path, "rig.steps=run rigprintk.flood_count=-1")
    assert res.outcome.cls == "guest-error", res.outcome.detail
    assert res.outcome.detail == (
        "init reported: step failed: rigprintk: `-1' invalid for parameter `flood_count'; "
        "rig-init: module: rigprintk refused to load (Invalid argument) with "
        "\"flood_count=-1 \": its reason is the kernel's line above; "
        "rig-init: step module failed"), res.outcome.detail
    # The last line before the exit reached the transcript whole.
    assert re.search(rb"\] \d+: rig-init: end status=17\r\n", res.console), \
        f"transcript cut: {res.console[-300:]!r}"


@pytest.mark.boots
def test_the_least_memory_the_check_allows_boots(tmp_path):
    """The memory rule refuses what cannot reach init, not what can: a boot
    with exactly the minimum it asks reaches init and ends clean."""
    from rig import inputs
    from rig.artifacts import built as artifacts
    sizes = {"kernel image": artifacts.kernel("patched").path("bzImage").stat().st_size,
             "initramfs": artifacts.initramfs("patched").path("initramfs").stat().st_size}
    least = next(mb for mb in range(8, 512) if not inputs.problems(2, mb, "", sizes))
    res = boot(BootRequest(name="least-memory", run_dir=tmp_path / "run", memory_mb=least))
    assert res.outcome.cls == "clean", f"{least} MiB: {res.outcome.detail}"


@pytest.mark.boots
def test_a_restored_runs_files_are_its_users_alone_whatever_the_umask(tmp_path):
    """The template's evidence is copied into a restored run: under umask
    000 those copies were 0666."""
    proc = subprocess.run([sys.executable, "-c",
                           "import os, sys; os.umask(0); from rig.cli import main; "
                           "sys.exit(main(sys.argv[1:]))", "boot", "--quiet", "--clock",
                           "icount", "--cmdline", "rig.steps=kmsg"],
                          cwd=paths.REPO, env={**os.environ, "RIG_RUNS": str(tmp_path / "runs")},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run,) = (tmp_path / "runs").iterdir()
    assert oct(run.stat().st_mode & 0o777) == "0o700"
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in run.iterdir()}
    assert set(modes.values()) == {"0o600"}, modes
