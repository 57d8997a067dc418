"""Replay on real boots: a deterministic panic run, restored from init's
snapshot as the scenarios' are, is a self-describing bundle that `rig
replay` reproduces byte for byte; so is one booted from the firmware; --gdb
stops it for a real gdb, which breaks on panic() and lets it go on
(identical up to the breakpoint); a missing input is named with its rebuild
command."""
import json
import re
import shutil
import socket
import subprocess
import sys
import time

import pytest

from rig import bundle, paths
from rig.boot import BootRequest, boot
from rig.rigprintk import cmdline, mask
from rig.tests.helpers import HOST_LOCK_WAIT_S
from rig.tools import replay

pytestmark = pytest.mark.boots

PANIC_IN_NMI = "rig.steps=run " + cmdline(scen="replay", crash="panic-nmi", crash_cpu=1,
                                          flood_count=100, flood_cpus=mask([0]),
                                          flood_wait=False, flood_backlog_ms=50)


@pytest.fixture(autouse=True)
def runs_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("RIG_RUNS", str(tmp_path / "runs"))


@pytest.fixture(scope="module")
def panic_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("bundle") / "run"
    result = boot(BootRequest(flavor="patched", name="replay-panic", cmdline=PANIC_IN_NMI,
                              clock="icount", snapshot=True, run_dir=d))
    assert result.outcome.cls == "panic", result.outcome.detail
    return d


def test_every_run_directory_is_a_self_describing_bundle(panic_run):
    b = bundle.load(panic_run)
    assert b["argv"][0].endswith("qemu-system-x86_64") and "-icount" in b["argv"]
    # The boot's kernel command line stops at the snapshot point; the
    # scenario's parameters reached init through fw_cfg.
    assert b["cmdline"].endswith("rig.snapshot=1")
    assert b["request"]["cmdline"] == PANIC_IN_NMI
    assert b["determinism"]["icount_shift"] == b["machine"]["icount_shift"]
    # The firmware QEMU loads and the saved VM are inputs too.
    assert set(b["inputs"]) == {"qemu", "firmware", "kernel", "initramfs", "snapshot"}
    assert b["inputs"]["initramfs"]["module_sha256"]
    assert b["outcome"] == "panic" and b["rig"]["commit"]
    for name in bundle.EVIDENCE:
        assert b["evidence"][name]["bytes"] == (panic_run / name).stat().st_size


def test_replay_of_a_panic_run_is_byte_identical(panic_run, capsys):
    rc = replay.replay(panic_run)
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "IDENTICAL: 3 of 3 evidence files" in out and "replayed panic" in out


def test_replay_of_a_booted_panic_run_is_byte_identical(tmp_path, capsys):
    """A run booted from the firmware (--snapshot off) replays from the firmware."""
    d = tmp_path / "booted"
    result = boot(BootRequest(flavor="patched", name="replay-booted", cmdline=PANIC_IN_NMI,
                              clock="icount", run_dir=d))
    assert result.outcome.cls == "panic", result.outcome.detail
    assert set(bundle.load(d)["inputs"]) == {"qemu", "firmware", "kernel", "initramfs"}
    rc = replay.replay(d)
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "IDENTICAL: 3 of 3 evidence files" in out and "replayed panic" in out


def test_replay_names_the_first_difference_of_a_changed_bundle(panic_run, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(panic_run, copy)
    b = json.loads((copy / "bundle.json").read_text())
    console = bytearray((copy / "console.log").read_bytes())
    at = console.index(b"Kernel panic")
    console[at] = ord("k")
    (copy / "console.log").write_bytes(bytes(console))
    b["evidence"]["console.log"]["sha256"] = bundle.sha256_file(copy / "console.log")
    (copy / "bundle.json").write_text(json.dumps(b))
    assert replay.replay(copy) == 1
    out = capsys.readouterr().out
    assert f"first difference at byte {at}" in out and "kernel panic" in out, out
    assert "uart.log: identical" in out


def test_replay_names_a_missing_input_and_how_to_rebuild_it(panic_run, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(panic_run, copy)
    b = json.loads((copy / "bundle.json").read_text())
    b["inputs"]["kernel"].update(key="0000000000000000", sha256="0" * 64,
                                 path=str(tmp_path / "bzImage"))
    (copy / "bundle.json").write_text(json.dumps(b))
    res = subprocess.run([sys.executable, "-m", "rig", "replay", str(copy)],
                         capture_output=True, text=True, cwd=paths.REPO)
    assert res.returncode == 2
    assert "kernel-patched 0000000000000000" in res.stderr
    assert "python3 -m rig build kernel --flavor patched" in res.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_replay_with_gdb_stops_for_gdb_which_breaks_on_panic(panic_run, tmp_path):
    port = free_port()
    rig = subprocess.Popen([sys.executable, "-m", "rig", "replay", "--quiet", "--gdb",
                            "--gdb-port", str(port), str(panic_run)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           cwd=paths.REPO)
    try:
        hint = rig.stdout.readline()
        assert "attach with" in hint, hint
        vmlinux = rig.stdout.readline().split()[1]
        # The stub listens once QEMU runs, which may wait for the host lock
        # (another worker's real-time boot): wait while the replay lives.
        deadline = time.monotonic() + HOST_LOCK_WAIT_S
        while time.monotonic() < deadline and rig.poll() is None:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        gdb = subprocess.run(["gdb", "-batch", "-nx", vmlinux,
                              "-ex", f"target remote 127.0.0.1:{port}",
                              "-ex", "break panic", "-ex", "continue", "-ex", "bt 3",
                              "-ex", "delete", "-ex", "detach"],
                             capture_output=True, text=True, timeout=300)
        assert "Breakpoint 1, " in gdb.stdout and "in panic ()" in gdb.stdout, \
            gdb.stdout + gdb.stderr
        out, _ = rig.communicate(timeout=300)
    finally:
        if rig.poll() is None:
            rig.kill()
            rig.wait()
    assert "replayed panic" in out, out
    # A gdb stop moves virtual time on (the breakpoint splits translation
    # blocks): the evidence is identical up to the panic, where gdb stopped it.
    if rig.returncode == 1:
        recorded = (panic_run / "console.log").read_bytes()
        panic_line = recorded.rfind(b"\n", 0, recorded.index(b"Kernel panic")) + 1
        at = int(re.search(r"console.log: first difference at byte (\d+)", out).group(1))
        assert at >= panic_line, f"the replay differs before the breakpoint:\n{out}"
    else:
        assert rig.returncode == 0 and "IDENTICAL" in out, out
