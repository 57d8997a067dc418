"""Nothing outlives the harness: a build whose rig is killed outright
(SIGKILL, no cleanup of its own) takes make and its compilers along, and
what killed runs left in the runtime directory goes at the next start."""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import pytest

from rig import paths
from rig.artifacts.kernel import kernel_step
from rig.tests.helpers import wait_for



def processes_naming(text: str) -> List[str]:
    """'pid comm' of every live process whose command line or working
    directory holds text."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            stat = Path(f"/proc/{entry}/stat").read_text()
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if (text.encode() in cmd or text in cwd) and stat.rsplit(")", 1)[1].split()[0] != "Z":
            found.append(f"{entry} {stat[stat.index('(') + 1:stat.rindex(')')]}")
    return found


def slow_sources(where: Path, files: int = 8, lines: int = 6000) -> Path:
    """A Makefile and C files that keep make -j2 and gcc -O2 busy for a while."""
    where.mkdir()
    for i in range(files):
        body = "\n".join(f"    x = x * {k + 3} + (x >> {k % 7 + 1}) ^ {k};" for k in range(lines))
        (where / f"f{i}.c").write_text(f"unsigned long f{i}(unsigned long x)\n{{\n{body}\n"
                                       "    return x;\n}\n")
    objs = " ".join(f"f{i}.o" for i in range(files))
    (where / "Makefile").write_text(f"all: {objs}\n%.o: %.c\n\tgcc -O2 -c $< -o $@\n")
    return where


def killed_while_compiling(argv, marker: str, env=None) -> List[str]:
    """Start argv (a rig that builds), SIGKILL it once a compiler of its
    build runs, and return what of the build is still running 1 s later."""
    rig = subprocess.Popen(argv, cwd=paths.REPO, env={**os.environ, **(env or {})},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    try:
        wait_for(lambda: any(p.split()[1] in ("cc1", "gcc", "ld", "modpost")
                             for p in processes_naming(marker)), 120,
                 "the build to start a compiler")
        rig.send_signal(signal.SIGKILL)
        rig.wait()
        deadline = time.monotonic() + 1
        while processes_naming(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        return processes_naming(marker)
    finally:
        for p in processes_naming(marker):
            os.kill(int(p.split()[0]), signal.SIGKILL)


@pytest.mark.builds
def test_a_killed_build_leaves_no_make_or_compiler_running(tmp_path):
    """A build command run the way every rig build runs one (run_logged),
    its rig killed with SIGKILL while gcc compiles: make's remaining work
    would take seconds more, yet nothing of it runs 1 s later."""
    src = slow_sources(tmp_path / "slow")
    harness = ("import sys; from pathlib import Path; "
               "from rig.artifacts.runner import run_logged; "
               "run_logged('leftover-test', ['make', '-j2', '-C', sys.argv[1]], "
               "Path(sys.argv[2]))")
    left = killed_while_compiling([sys.executable, "-c", harness, str(src),
                                   str(tmp_path / "build.log")], str(src))
    assert left == [], "left running after the rig was killed"
    assert len(list(src.glob("*.o"))) < 8, "the build finished before the kill: no test"


@pytest.mark.builds
def test_a_killed_rig_build_module_leaves_nothing_running(tmp_path):
    """`rig build module --force` killed with SIGKILL once its compiler runs
    (the module builds in a cache of its own against the vanilla kernel's
    real build tree)."""
    kernel = kernel_step("vanilla")
    if not kernel.is_built():
        pytest.skip("needs the vanilla kernel (make kernel)")
    cache = tmp_path / "cache"
    (cache / kernel.name).mkdir(parents=True)
    (cache / kernel.name / kernel.key).symlink_to(kernel.dir)
    left = killed_while_compiling([sys.executable, "-m", "rig", "build", "module", "--flavor",
                                   "vanilla", "--force"], str(cache),
                                  env={"RIG_CACHE": str(cache)})
    assert left == [], "left running after the rig was killed"


def test_the_runtime_directory_is_swept_of_what_killed_runs_left(tmp_path, monkeypatch):
    """A socket nobody has bound (its QEMU was killed), a link into a
    libvirt stage that is gone, a remote volume's lock nobody holds: gone at
    the next process's first use. A bound socket, a link to a socket QEMU
    has yet to make, a held lock and the host lock stay."""
    from rig import rundir
    from rig.locks import locked
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)

    def socket_file(name, listen):
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(runtime / name))
        if listen:
            s.listen()
            return s
        s.close()
    live = socket_file("qmp-live.sock", True)
    socket_file("qmp-stale.sock", False)
    (runtime / "console-gone.sock").symlink_to(tmp_path / "stage" / "console.sock")
    (tmp_path / "live-stage").mkdir()         # QEMU has yet to make its socket there
    (runtime / "console-coming.sock").symlink_to(tmp_path / "live-stage" / "console.sock")
    (runtime / "volume-free.lock").write_text("")
    (runtime / "host-lab-1-0123456789ab.lock").write_text("")     # a remote host's
    (runtime / "host.lock").write_text("")
    holder = subprocess.Popen([sys.executable, "-c",
                               "import sys, time; from pathlib import Path\n"
                               "from rig.locks import locked\n"
                               "with locked(Path(sys.argv[1])):\n"
                               "    print('held', flush=True); time.sleep(60)",
                               str(runtime / "volume-held.lock")], cwd=paths.REPO,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        gone = rundir.sweep(runtime)
        assert sorted(gone) == ["console-gone.sock", "host-lab-1-0123456789ab.lock",
                                "qmp-stale.sock", "volume-free.lock"]
        assert sorted(p.name for p in runtime.iterdir()) == \
            ["console-coming.sock", "host.lock", "qmp-live.sock", "volume-held.lock"]
    finally:
        holder.kill()
        holder.wait()
        live.close()
    # A lock removed by its holder is taken again afresh, never shared.
    with locked(runtime / "volume-x.lock", remove=True):
        assert (runtime / "volume-x.lock").exists()
    assert not (runtime / "volume-x.lock").exists()
