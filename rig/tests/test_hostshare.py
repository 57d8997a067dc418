"""rig.vm.hostshare: real-time boots hold the host alone, deterministic ones share it."""
import fcntl
import os

from rig import config
from rig.vm import hostshare


def try_lock(path, how) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_deterministic_boots_share_and_a_real_time_boot_is_alone(tmp_path, monkeypatch):
    lock = tmp_path / "host.lock"
    monkeypatch.setenv(config.VARIABLES["host_lock"], str(lock))
    with hostshare.hold(alone=False):
        assert try_lock(lock, fcntl.LOCK_SH), "a second deterministic boot must start"
        assert not try_lock(lock, fcntl.LOCK_EX), "a real-time boot must wait"
    with hostshare.hold(alone=True):
        assert not try_lock(lock, fcntl.LOCK_SH), "nothing may run beside a real-time boot"
    assert try_lock(lock, fcntl.LOCK_EX), "the lock goes with the boot"


def test_each_holder_logs_its_wait_and_hold(tmp_path, monkeypatch):
    import json
    log = tmp_path / "lock.jsonl"
    monkeypatch.setenv(config.VARIABLES["host_lock"], str(tmp_path / "host.lock"))
    monkeypatch.setenv(config.VARIABLES["host_lock_log"], str(log))
    with hostshare.hold(alone=True, what="S1-boot"):
        pass
    with hostshare.hold(alone=False, what="S2"):
        pass
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["what"], e["alone"]) for e in entries] == [("S1-boot", True), ("S2", False)]
    assert all(e["waited_s"] >= 0 and e["held_s"] >= 0 and e["pid"] == os.getpid()
               for e in entries)
