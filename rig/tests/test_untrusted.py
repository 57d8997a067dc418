"""Files the rig reads but did not make: a hosts file and a run bundle travel
between people and CI jobs, and the rig runs as root. Each hostile one is
refused by name (exit 2), and nothing it asked for ran or was written."""
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rig import paths
from rig.tools.bench import biglog


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


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A real run's directory: an icount boot restored from init's snapshot."""
    return biglog.base_run(tmp_path_factory.mktemp("recorded") / "run", "untrusted")


def edited_copy(run: Path, where: Path, edit) -> Path:
    """A copy of the run directory whose bundle.json edit(bundle) changed."""
    shutil.copytree(run, where)
    b = json.loads((where / "bundle.json").read_text())
    edit(b)
    (where / "bundle.json").write_text(json.dumps(b))
    return where


def hashes(d: Path):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())
            if p.is_file()}


HOSTILE_BUNDLES = {
    "argv runs a shell": (
        lambda b, mark: b.update(argv=["/bin/sh", "-c", f"id > {mark}"] + b["argv"][1:]),
        "refused: its QEMU command line is not the one the rig makes for its request: "
        "argument 0 is '/bin/sh'"),
    "argv adds an option": (
        lambda b, mark: b.update(argv=b["argv"] + ["-D", str(mark)]),
        "refused: its QEMU command line has"),
    "QEMU from outside the cache": (
        lambda b, mark: b["inputs"]["qemu"].update(step="custom", path="/bin/sh"),
        "refused: the qemu must come from the cache step qemu, not 'custom'"),
    "a QMP command that writes a file": (
        lambda b, mark: b["request"].update(qmp_when=[
            "rig-init", "dump-guest-memory", {"paging": False, "protocol": f"file:{mark}"}]),
        "refused: QMP action"),
    "a device option smuggled in a UART property": (
        lambda b, mark: b["request"]["uart_props"].update({"nmi-pattern": f"x,log={mark}"}),
        "refused: UART property nmi-pattern="),
}


@pytest.mark.boots
@pytest.mark.parametrize("case", list(HOSTILE_BUNDLES))
def test_a_hostile_bundle_is_refused_and_nothing_runs_or_is_written(case, recorded, tmp_path):
    mark = tmp_path / "ran"
    edit, message = HOSTILE_BUNDLES[case]
    hostile = edited_copy(recorded, tmp_path / "hostile", lambda b: edit(b, mark))
    before = hashes(hostile)
    runs = tmp_path / "runs"
    rc, out = rig("replay", "--quiet", str(hostile), env={"RIG_RUNS": str(runs)})
    assert rc == 2 and f"error: {message}" in out, out
    assert "Traceback" not in out, out
    assert not mark.exists(), f"{case}: something ran\n{out}"
    assert not runs.exists() or not any(runs.iterdir()), "the refused replay wrote a run"
    assert hashes(hostile) == before


@pytest.mark.boots
def test_a_bundle_naming_another_run_replays_only_into_a_run_of_its_own(recorded, tmp_path):
    """run_dir and every path of argv moved onto another run's directory: a
    consistent bundle, so the replay runs, but into its own new directory;
    the other run's evidence is untouched."""
    victim = tmp_path / "victim"
    shutil.copytree(recorded, victim)
    before = hashes(victim)

    def aim_at_victim(b):
        b["argv"] = [a.replace(str(recorded), str(victim)) for a in b["argv"]]
        b["qmp_socket"] = b["qmp_socket"].replace(str(recorded), str(victim))
        b["run_dir"] = str(victim)
    hostile = edited_copy(recorded, tmp_path / "hostile", aim_at_victim)
    runs = tmp_path / "runs"
    rc, out = rig("replay", "--quiet", str(hostile), env={"RIG_RUNS": str(runs)})
    assert rc == 0 and "IDENTICAL: 3 of 3 evidence files" in out, out
    assert hashes(victim) == before
    made = list(runs.iterdir())
    assert len(made) == 1 and made[0].name.split("-")[2] == "replay"


def test_binary_data_and_a_decompression_bomb_are_refused_by_name(tmp_path):
    """A gzip bomb of zeros is binary at its first bytes; one of text lines
    (what a bomb made to pass for a log looks like) is stopped once it has
    given 200 times what it read, or at --max-decompressed."""
    zeros, text = tmp_path / "zeros.gz", tmp_path / "text.gz"
    with gzip.open(zeros, "wb") as f:
        f.write(bytes(64 << 20))
    line = b"[    1.000000] " + b"a" * 64 + b"\n"
    with gzip.open(text, "wb", compresslevel=9) as f:
        for _ in range(80):
            f.write(line * ((1 << 20) // len(line)))
    assert text.stat().st_size * 200 < (64 << 20), "not a bomb: no test"
    log = paths.REPO / "rig" / "tests" / "data" / "vanilla-boot.console.xz"
    uart = paths.REPO / "rig" / "tests" / "data" / "patched-s7-nmi-mid-line.uart.log.xz"
    cases = [(["diff", "/bin/true", str(log)], "/bin/true: binary data, an ELF file"),
             (["parse", "/bin/true"], "/bin/true: binary data, an ELF file"),
             (["diff", str(log), str(uart)], "binary data, the UART's register log"),
             (["diff", str(zeros), str(log)], f"{zeros}: binary data: 65536 of its first"),
             (["parse", str(text)], f"{text}: gzip data that decompresses to more than 200 "
                                    "times its size"),
             (["diff", "--max-decompressed", "32", str(log), str(text)],
              f"{text}: decompresses to more than 32 MiB")]
    for args, message in cases:
        rc, out = rig(*args)
        assert rc == 2 and message in out, (args, out)
        assert "Traceback" not in out
