"""Files the rig reads but did not make: a hosts file and a run bundle travel
between people and CI jobs, and the rig runs as root. Each hostile one is
refused by name (exit 2), and nothing it asked for ran or was written."""
import os
import subprocess
import sys
from pathlib import Path

from rig import paths


def rig(*args, env=None, timeout=120):
    proc = subprocess.run([sys.executable, "-m", "rig", *args], cwd=paths.REPO,
                          env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def evil_script(tmp_path: Path) -> Path:
    """A script that leaves a mark if anything runs it."""
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\nid > {tmp_path / 'ran'}\n")
    script.chmod(0o755)
    return script


def test_a_hosts_line_with_a_command_is_refused_and_runs_nothing(tmp_path):
    script = evil_script(tmp_path)
    hosts = tmp_path / "hosts.txt"
    hosts.write_text(f"good qemu+tcp://198.18.255.2/system\n"
                     f"evil qemu+ssh://localhost/system?command={script}\n")
    for args in (["hosts", "--hosts", str(hosts), "--check"],
                 ["hosts", "--libvirt-uri", f"qemu+ssh://localhost/system?command={script}",
                  "--check"],
                 ["boot", "--quiet", "--hosts", str(hosts)]):
        rc, out = rig(*args, env={"RIG_RUNS": str(tmp_path / "runs")})
        assert rc == 2, out
        assert "command= runs that program instead of ssh" in out, out
        assert "Traceback" not in out, out
        assert not (tmp_path / "ran").exists(), f"{args}: the script ran\n{out}"
    assert "line 2" in rig("hosts", "--hosts", str(hosts))[1]
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
