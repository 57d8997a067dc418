"""Test hosts on one machine, for the fleet tests: each host is

- a network namespace, joined to the harness by a veth pair, with an
  address of the test's own (RFC 2544's benchmarking range, 198.18.0.0/15);
- a mount namespace of its own: libvirt's state, pools, logs and runtime
  directories are tmpfs mounts nobody outside it sees, its consoles are
  ptys of its own devpts;
- a pid namespace whose init is tini: when the host's libvirtd dies, tini
  exits and the kernel takes every process of the host with it, QEMUs
  included, as a host that crashes would;
- a libvirtd that listens on the host's address alone
  (qemu+tcp://ADDRESS/system, no TLS: the address is reachable from this
  machine only).

The harness reaches a host only through libvirt, as it would a machine
across the network. Hosts die with the process that made them (tini's
parent-death signal, and the harness's on the namespace launcher), and
stop() tears a fleet down; the namespaces of a fleet whose maker was killed
are swept by the next one.
"""
import contextlib
import itertools
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

from rig.children import die_with_parent
from rig.faults import RigFault

INIT = Path(__file__).with_name("host-init.sh")
PREFIX = "rigfleet"
NETWORK = "198.18"
READY_TIMEOUT_S = 30.0
POOL_MIB = 2048
NEEDS = ("ip", "unshare", "tini", "libvirtd")
_slots = itertools.count()      # this process's hosts: namespace names and /30s
_subnet = None                  # this process's /24 of NETWORK, taken at its first host


class FleetError(RigFault, RuntimeError):
    """A test host could not be made or did not come up."""


@dataclass
class TestHost:
    name: str              # fleet-a, fleet-b, ...
    netns: str
    address: str
    proc: subprocess.Popen
    log: Path

    @property
    def uri(self) -> str:
        return f"qemu+tcp://{self.address}/system"

    def pids(self) -> List[int]:
        """The processes of the host (its namespace's), as the machine sees them."""
        out = subprocess.run(["ip", "netns", "pids", self.netns], capture_output=True,
                             text=True).stdout
        return [int(p) for p in out.split()]

    def qemu_pids(self) -> List[int]:
        found = []
        for pid in self.pids():
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue
            if comm.startswith("qemu-system"):
                found.append(pid)
        return found

    def libvirtd_pid(self) -> Optional[int]:
        for pid in self.pids():
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == "libvirtd":
                    return pid
            except OSError:
                continue
        return None


def why_not() -> Optional[str]:
    """Why this machine cannot make test hosts, or None."""
    if os.geteuid() != 0:
        return "test hosts need root (network, mount and pid namespaces)"
    missing = [n for n in NEEDS if shutil.which(n) is None and
               not Path("/usr/sbin", n).exists()]
    if missing:
        return f"test hosts need {', '.join(missing)}: run `make deps`"
    probe = f"{PREFIX}-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot make a network namespace here: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _run(*argv: str) -> None:
    done = subprocess.run(list(argv), capture_output=True, text=True)
    if done.returncode != 0:
        raise FleetError(f"`{' '.join(argv)}` failed: {done.stderr.strip()}")


def sweep() -> List[str]:
    """Remove the namespaces of fleets whose maker is gone; returns their names."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    gone = []
    for line in out.splitlines():
        name = line.split()[0] if line.split() else ""
        parts = name.split("-")
        if len(parts) != 3 or parts[0] != PREFIX or not parts[1].isdigit():
            continue
        if Path(f"/proc/{parts[1]}").exists():
            continue
        _remove_netns(name)
        gone.append(name)
    return gone


def _remove_netns(netns: str) -> None:
    for _ in range(50):
        pids = subprocess.run(["ip", "netns", "pids", netns], capture_output=True,
                              text=True).stdout.split()
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    subprocess.run(["ip", "netns", "del", netns], capture_output=True)


def hidden() -> List[str]:
    """What of the harness's machine a host must not see: the rig's tree, its
    build cache and run directories, the temporary and home directories.
    Each is a tmpfs in the host's mount namespace: a domain that named a
    file of the harness would fail, not quietly read it."""
    from rig import paths
    found: List[Path] = []
    candidates = {p.resolve() for p in (paths.REPO, paths.cache_root(), paths.runs_root(),
                                        Path("/tmp"), Path("/var/tmp"), Path.home())}
    for p in sorted(candidates, key=lambda p: len(p.parts)):
        # Under a hidden directory already: hidden with it.
        if p.is_dir() and p != Path("/") and not any(h in p.parents for h in found):
            found.append(p)
    return [str(p) for p in found]


def _take_subnet() -> int:
    """A /24 of NETWORK no other process's hosts use; call it under
    _address_lock until the first host's address is set."""
    global _subnet
    if _subnet is None:
        used = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True,
                              text=True).stdout
        taken = {int(m) for m in re.findall(rf"inet {re.escape(NETWORK)}\.(\d+)\.", used)}
        free = [n for n in range(256) if n not in taken]
        if not free:
            raise FleetError(f"every /24 of {NETWORK}.0.0/16 is in use")
        _subnet = free[0]
    return _subnet


@contextlib.contextmanager
def _address_lock():
    """Two test workers make hosts at once: one takes a /24 at a time."""
    from rig import rundir
    from rig.artifacts.cache import locked
    with locked(rundir.runtime_dir() / "fleet-addresses.lock"):
        yield


def start(count: int, workdir: Path, pool_mib: int = POOL_MIB,
          names: Optional[List[str]] = None) -> List[TestHost]:
    """count hosts, each with pool_mib of pool space; logs in workdir."""
    sweep()
    workdir.mkdir(parents=True, exist_ok=True)
    names = names or [f"fleet-{chr(ord('a') + i)}" for i in range(count)]
    hosts: List[TestHost] = []
    try:
        with _address_lock():
            for name in names:
                hosts.append(_start_host(name, next(_slots), workdir, pool_mib))
        for host in hosts:
            _wait_ready(host)
    except BaseException:
        stop(hosts)
        raise
    return hosts


def _start_host(name: str, index: int, workdir: Path, pool_mib: int) -> TestHost:
    pid = os.getpid()
    subnet = _take_subnet()
    netns = f"{PREFIX}-{pid}-{index}"
    if index >= 64:
        raise FleetError("a process makes at most 64 test hosts (one /24 of addresses)")
    ours, theirs = f"{NETWORK}.{subnet}.{4 * index + 1}", f"{NETWORK}.{subnet}.{4 * index + 2}"
    veth = f"rf{pid}-{index}"[:15]
    _run("ip", "netns", "add", netns)
    try:
        _run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0",
             "netns", netns)
        _run("ip", "addr", "add", f"{ours}/30", "dev", veth)
        _run("ip", "link", "set", veth, "up")
        _run("ip", "-n", netns, "addr", "add", f"{theirs}/30", "dev", "eth0")
        _run("ip", "-n", netns, "link", "set", "eth0", "up")
        log = workdir / f"{name}.log"
        with open(log, "wb") as out:
            # tini -p: the host's init dies with the launcher, which dies
            # with the harness (its parent-death signal).
            proc = subprocess.Popen(
                ["ip", "netns", "exec", netns, "unshare", "--mount", "--pid", "--fork",
                 "tini", "-p", "SIGKILL", "--", str(INIT), theirs, str(pool_mib)]
                + hidden(),
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent(signal.SIGKILL))
    except BaseException:
        _remove_netns(netns)
        raise
    return TestHost(name, netns, theirs, proc, log)


def _wait_ready(host: TestHost) -> None:
    import libvirt
    libvirt.registerErrorHandler(lambda *_: None, None)
    deadline = time.monotonic() + READY_TIMEOUT_S
    last = ""
    while time.monotonic() < deadline:
        if host.proc.poll() is not None:
            break
        try:
            libvirt.open(host.uri).close()
            return
        except libvirt.libvirtError as e:
            last = str(e)
        time.sleep(0.2)
    tail = host.log.read_text(errors="replace").strip().splitlines()[-5:]
    raise FleetError(f"test host {host.name} ({host.uri}) did not come up within "
                     f"{READY_TIMEOUT_S:.0f} s: {last or 'its init exited'}; its log "
                     f"({host.log}) ends:\n" + "\n".join(tail))


def kill_libvirtd(host: TestHost) -> None:
    """The host's libvirtd dies (SIGKILL); its init then ends the host."""
    pid = host.libvirtd_pid()
    if pid is None:
        raise FleetError(f"test host {host.name} has no libvirtd to kill")
    os.kill(pid, signal.SIGKILL)


def stop(hosts: List[TestHost]) -> None:
    """Tear the hosts down: their processes, namespaces and veth pairs."""
    for host in hosts:
        if host.proc.poll() is None:
            host.proc.kill()
        try:
            host.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        _remove_netns(host.netns)
