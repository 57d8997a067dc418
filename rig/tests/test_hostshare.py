"""rig.hostshare: real-time boots hold the host alone, deterministic ones share it."""
import fcntl
import os

from rig import hostshare


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
    monkeypatch.setenv(hostshare.LOCK_ENV, str(lock))
    with hostshare.hold(alone=False):
        assert try_lock(lock, fcntl.LOCK_SH), "a second deterministic boot must start"
        assert not try_lock(lock, fcntl.LOCK_EX), "a real-time boot must wait"
    with hostshare.hold(alone=True):
        assert not try_lock(lock, fcntl.LOCK_SH), "nothing may run beside a real-time boot"
    assert try_lock(lock, fcntl.LOCK_EX), "the lock goes with the boot"
