"""Which backend starts QEMU: "direct" (the harness spawns it, the default)
or "libvirt" (libvirtd does, on one of the given URIs). Chosen by pytest
--backend/--libvirt-uri or `rig boot --backend`, and carried in the
environment so that pytest-xdist workers and subprocesses choose alike; with
several URIs each xdist worker takes one in turn (gw0 the first, ...)."""
import os
from typing import List

ENV_BACKEND = "RIG_BACKEND"
ENV_URIS = "RIG_LIBVIRT_URI"        # comma-separated
BACKENDS = ("direct", "libvirt")


def selected() -> str:
    backend = os.environ.get(ENV_BACKEND, "direct")
    if backend not in BACKENDS:
        raise ValueError(f"{ENV_BACKEND}={backend!r}: choose one of {', '.join(BACKENDS)}")
    return backend


def uris() -> List[str]:
    from rig.machine_libvirt import DEFAULT_URI
    return [u for u in os.environ.get(ENV_URIS, "").split(",") if u] or [DEFAULT_URI]


def uri_for_this_worker() -> str:
    """gwN takes URI N modulo their number; a run without xdist the first."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    all_uris = uris()
    return all_uris[index % len(all_uris)]


def choose(backend: str, libvirt_uris: List[str]) -> None:
    os.environ[ENV_BACKEND] = backend
    if libvirt_uris:
        os.environ[ENV_URIS] = ",".join(libvirt_uris)


def make_machine(cfg, phases, **kwargs):
    from rig.machine import Machine
    if selected() == "libvirt":
        from rig.machine_libvirt import LibvirtMachine
        return LibvirtMachine(cfg, phases, uri=uri_for_this_worker(), **kwargs)
    return Machine(cfg, phases, **kwargs)
