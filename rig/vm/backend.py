"""Which backend starts QEMU: "direct" (the harness spawns it, the default)
or "libvirt" (libvirtd does, on one of the given hosts). Chosen by pytest
--backend/--libvirt-uri/--hosts or `rig boot --backend`, and carried in the
configuration (rig.config) so that pytest-xdist workers and subprocesses
choose alike; with several hosts each xdist worker takes a slot of one
(rig.fleet.hosts), and a host that failed in this process is passed over."""
from pathlib import Path
from typing import List, Optional, Set

from rig import config
from rig.fleet import hosts as fleet_hosts

BACKENDS = ("direct", "libvirt")


def selected() -> str:
    backend = config.current().backend or "direct"
    if backend not in BACKENDS:
        raise ValueError(f"{config.VARIABLES['backend']}={backend!r}: choose one of "
                         f"{', '.join(BACKENDS)}")
    return backend


# Hosts that failed in this process: their boots go elsewhere from now on.
FAILED: Set[str] = set()


def fleet() -> List[fleet_hosts.FleetHost]:
    """The hosts of the configuration: its hosts file, its URIs, or this
    machine's libvirtd."""
    from rig.vm.machine_libvirt import DEFAULT_URI
    cfg = config.current()
    if cfg.hosts_file:
        return fleet_hosts.read(Path(cfg.hosts_file))
    return fleet_hosts.from_uris(list(cfg.libvirt_uris) or [DEFAULT_URI],
                                 int(cfg.host_slots or 1))


def worker_index() -> int:
    worker = config.xdist_worker()
    return int(worker[2:]) if worker[2:].isdigit() else 0


def host_for_this_worker() -> Optional[fleet_hosts.FleetHost]:
    """gwN takes slot N of the fleet (round robin over the hosts), past the
    hosts that failed; None when every host failed."""
    return fleet_hosts.for_worker(fleet(), worker_index(), FAILED)


def choose(backend: str, libvirt_uris: List[str], hosts_file: Optional[str] = None,
           slots: Optional[int] = None) -> None:
    changes = {"backend": backend}
    if libvirt_uris:
        fleet_hosts.from_uris(libvirt_uris)         # a URI the rig refuses is named now
        changes["libvirt_uris"] = tuple(libvirt_uris)
    if hosts_file:
        fleet_hosts.read(Path(hosts_file))          # a bad file is named now
        changes["hosts_file"] = str(Path(hosts_file).resolve())
    if slots:
        changes["host_slots"] = str(slots)
    config.set_fields(**changes)


def make_machine(cfg, phases, **kwargs):
    from rig.vm.machine import Machine
    if selected() == "libvirt":
        from rig.vm.remote_host import is_remote
        host = host_for_this_worker()
        if host is None:
            raise fleet_hosts.HostsError(
                f"every host of the fleet failed in this run: {', '.join(sorted(FAILED))}")
        if is_remote(host.uri):
            from rig.vm.machine_remote import RemoteMachine
            return RemoteMachine(cfg, phases, fleet_host=host, **kwargs)
        from rig.vm.machine_libvirt import LibvirtMachine
        return LibvirtMachine(cfg, phases, uri=host.uri, **kwargs)
    return Machine(cfg, phases, **kwargs)
