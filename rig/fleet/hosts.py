"""The hosts a run spreads over, and which one each worker uses.

A fleet is given by --libvirt-uri repeated (each host named after its
URI's host part, --host-slots slots each), or by a hosts file (--hosts
FILE), one host per line:

    # name     URI                               options
    lab-1      qemu+ssh://lab-1/system           slots=4
    lab-2      qemu+tls://lab-2.example/system   slots=2
    fleet-a    qemu+tcp://198.18.7.2/system      slots=1 lock=machine

The URI must be one the rig accepts (rig.fleet.uri): allow=NAME[,NAME]
lets a line use libvirt URI parameters that run a command or name a file
of this machine (keyfile=, command=, ...), each named.

slots: how many boots the host runs at once (pytest-xdist workers bound to
it). lock: whose host lock its boots hold (rig.vm.hostshare): `host`, the
default, a lock of the harness's for that host, so that a boot on the
host's clock runs alone there; `machine`, the harness machine's own lock,
for a host that shares this machine's CPUs (the test hosts of
rig.fleet.netns_hosts).

Workers take the slots in turn, round robin over the hosts (gw0 the first
host's first slot, gw1 the second host's, ...). A host that failed during
this process's run is skipped from then on: its boots go to the next host
that has not failed (rig.boot reruns the failed boot there once).
"""
import shlex
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Set, Tuple

from rig.fleet import uri as uris
from rig.faults import RigFault

LOCKS = ("host", "machine")
OPTIONS = "slots=N, lock=host|machine, allow=PARAM[,PARAM]"


class HostsError(RigFault, ValueError):
    """A hosts file or option that cannot be used; names the line."""


@dataclass(frozen=True)
class FleetHost:
    name: str
    uri: str
    slots: int = 1
    lock: str = "host"
    allow: Tuple[str, ...] = ()       # URI parameters this host's line allows


def name_of(uri: str) -> str:
    return urllib.parse.urlsplit(uri).hostname or uri


def from_uris(given: List[str], slots: int = 1) -> List[FleetHost]:
    """Hosts given as --libvirt-uri (no allow=: that needs a hosts file)."""
    out = []
    for u in given:
        try:
            out.append(FleetHost(name_of(uris.check(u)), u, slots))
        except uris.URIError as e:
            raise HostsError(f"--libvirt-uri {e}") from None
    return out


def parse(text: str, source: str = "hosts file") -> List[FleetHost]:
    hosts: List[FleetHost] = []
    for number, line in enumerate(text.splitlines(), 1):
        where = f"{source}, line {number}"
        try:
            words = shlex.split(line, comments=True)
        except ValueError as e:
            raise HostsError(f"{where}: {e} in {line.strip()!r}") from None
        if not words:
            continue
        if len(words) < 2:
            raise HostsError(f"{where}: want `NAME URI [slots=N] [lock=host|machine] "
                             f"[allow=PARAM,...]`, got {line.strip()!r}")
        name, uri, options = words[0], words[1], {}
        if "://" not in uri:
            raise HostsError(f"{where}: {uri!r} is not a libvirt URI "
                             "(qemu+ssh://HOST/system, qemu+tls://..., qemu+tcp://...)")
        for word in words[2:]:
            key, eq, value = word.partition("=")
            if not eq or key not in ("slots", "lock", "allow"):
                raise HostsError(f"{where}: unknown option {word!r} ({OPTIONS})")
            options[key] = value
        try:
            slots = int(options.get("slots", "1"))
        except ValueError:
            slots = 0
        if slots < 1:
            raise HostsError(f"{where}: slots={options['slots']}: want a whole number of at "
                             "least 1")
        lock = options.get("lock", "host")
        if lock not in LOCKS:
            raise HostsError(f"{where}: lock={lock}: want host or machine")
        if any(h.name == name for h in hosts):
            raise HostsError(f"{where}: a second host named {name}")
        allow = tuple(a for a in options.get("allow", "").split(",") if a)
        try:
            uris.check(uri, allow)
        except uris.URIError as e:
            raise HostsError(f"{where}: {e}") from None
        hosts.append(FleetHost(name, uri, slots, lock, allow))
    if not hosts:
        raise HostsError(f"{source}: no hosts in it")
    return hosts


def read(path: Path) -> List[FleetHost]:
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise HostsError(f"hosts file {path}: {e.strerror}") from None
    return parse(text, f"hosts file {path}")


def write(path: Path, hosts: List[FleetHost]) -> None:
    path.write_text("".join(f"{h.name} {h.uri} slots={h.slots} lock={h.lock}"
                            + (f" allow={','.join(h.allow)}" if h.allow else "") + "\n"
                            for h in hosts))


def slots(hosts: List[FleetHost]) -> List[FleetHost]:
    """Every slot, round robin over the hosts."""
    out: List[FleetHost] = []
    for turn in range(max(h.slots for h in hosts)):
        out += [h for h in hosts if h.slots > turn]
    return out


def for_worker(hosts: List[FleetHost], index: int,
               failed: Optional[Set[str]] = None) -> Optional[FleetHost]:
    """Worker index's host; past the hosts that failed, the next that has
    not; None when all have."""
    failed = failed or set()
    every = slots(hosts)
    for step in range(len(every)):
        host = every[(index + step) % len(every)]
        if host.name not in failed:
            return host
    return None
