"""Which backend starts QEMU: "direct" (the harness spawns it, the default)
or "libvirt" (libvirtd does, on one of the given URIs). Chosen by pytest
--backend/--libvirt-uri or `rig boot --backend`, and carried in the
configuration (rig.config) so that pytest-xdist workers and subprocesses
choose alike; with several URIs each xdist worker takes one in turn (gw0 the
first, ...)."""
from typing import List

from rig import config

BACKENDS = ("direct", "libvirt")


def selected() -> str:
    backend = config.current().backend or "direct"
    if backend not in BACKENDS:
        raise ValueError(f"{config.VARIABLES['backend']}={backend!r}: choose one of "
                         f"{', '.join(BACKENDS)}")
    return backend


def uris() -> List[str]:
    from rig.vm.machine_libvirt import DEFAULT_URI
    return list(config.current().libvirt_uris) or [DEFAULT_URI]


def uri_for_this_worker() -> str:
    """gwN takes URI N modulo their number; a run without xdist the first."""
    worker = config.xdist_worker()
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    all_uris = uris()
    return all_uris[index % len(all_uris)]


def choose(backend: str, libvirt_uris: List[str]) -> None:
    changes = {"backend": backend}
    if libvirt_uris:
        changes["libvirt_uris"] = tuple(libvirt_uris)
    config.set_fields(**changes)


def make_machine(cfg, phases, **kwargs):
    from rig.vm.machine import Machine
    if selected() == "libvirt":
        from rig.vm.remote_host import is_remote
        uri = uri_for_this_worker()
        if is_remote(uri):
            from rig.vm.machine_remote import RemoteMachine
            return RemoteMachine(cfg, phases, uri=uri, **kwargs)
        from rig.vm.machine_libvirt import LibvirtMachine
        return LibvirtMachine(cfg, phases, uri=uri, **kwargs)
    return Machine(cfg, phases, **kwargs)
