"""rig cache prune: entries built and used through the cache's own ensure()
in a cache of the test's; what no build or boot used for the given time
goes, what was used lately stays, whatever its build time, and an
unfinished build whose lock is held is left to its builder."""
import fcntl
import os
import subprocess
import sys
import time

import pytest

from rig import paths
from rig.artifacts import prune
from rig.artifacts.cache import USED, Step, ensure


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("RIG_CACHE", str(root))
    return root


def built(name: str, payload: str):
    step = Step(name, {"payload": payload})
    ensure(step, lambda out: (out / "blob").write_bytes(payload.encode() * 1000) and
           {"blob": "blob"})
    return step


def age(entry, hours):
    then = time.time() - hours * 3600
    for p in [entry / "manifest.json", entry / USED]:
        if p.exists():
            os.utime(p, (then, then))


def test_what_was_not_used_lately_goes_and_a_cache_hit_counts_as_use(cache):
    old, used, fresh = built("kernel-x", "old"), built("kernel-x", "used"), built("qemu", "new")
    for step in (old, used):
        age(step.dir, 200)
    ensure(used, lambda out: pytest.fail("a cache hit must not build"))     # a use, now
    gone = prune.prune(unused_for_h=168)
    assert [e.path for e in gone] == [old.dir]
    assert not old.dir.exists() and not (old.step_dir / f"{old.key}.lock").exists()
    assert used.is_built() and fresh.is_built()
    assert (cache / "kernel-x" / "last.json").is_file(), "a miss can still say what changed"


def test_dry_run_removes_nothing_and_ccache_is_left_to_itself(cache, capsys):
    step = built("initramfs-x", "a")
    age(step.dir, 1000)
    (cache / "ccache" / "0").mkdir(parents=True)
    os.utime(cache / "ccache" / "0", (0, 0))
    assert [e.path for e in prune.prune(unused_for_h=1, dry_run=True)] == [step.dir]
    assert step.is_built() and (cache / "ccache" / "0").is_dir()
    assert "would remove initramfs-x/" in capsys.readouterr().out


def test_an_unfinished_build_goes_unless_its_builder_holds_the_lock(cache):
    step = Step("kernel-y", {"payload": "half"})
    step.dir.mkdir(parents=True)
    (step.dir / "partial.o").write_bytes(b"x")
    os.utime(step.dir, (0, 0))
    with open(step.step_dir / f"{step.key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert prune.prune(unused_for_h=1) == []
        fcntl.flock(lock, fcntl.LOCK_UN)
    (gone,) = prune.prune(unused_for_h=1)
    assert gone.path == step.dir and not gone.finished and not step.dir.exists()


def test_the_cli_prunes(cache):
    step = built("snapshot-x", "s")
    age(step.dir, 10)
    out = subprocess.run([sys.executable, "-m", "rig", "cache", "prune", "--unused-for", "5"],
                         cwd=paths.REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "removing snapshot-x/" in out.stdout and "freed 0.00 GB in 1 entries" in out.stdout
    assert not step.dir.exists()
