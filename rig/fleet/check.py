"""`rig hosts`: the fleet as the harness sees it, and whether each host
answers: its libvirt, the user its QEMU runs as, the rig's pool and its room."""
from typing import List, Tuple

from rig.fleet.hosts import FleetHost
from rig.vm.remote_host import Host, HostError, is_remote


def check(host: FleetHost) -> Tuple[bool, str]:
    """(it answers, what it says) for one host."""
    import libvirt
    head = f"{host.name} {host.uri} slots={host.slots} lock={host.lock}"
    if not is_remote(host.uri):
        return True, f"{head}: this machine's libvirtd (the local libvirt backend)"
    h = Host(host.uri, host.name)
    try:
        conn = h.connect()
        version = conn.getLibVersion()
        uid, _ = h.qemu_ids()
        from rig.vm.remote_storage import cache_pool_name
        pool_name = cache_pool_name()
        try:
            pool = conn.storagePoolLookupByName(pool_name)
            _, _, _, free = pool.info()
            pool_text = (f"pool {pool_name}: {pool.numOfVolumes()} volumes, "
                         f"{free / 2**20:.0f} MiB free")
        except libvirt.libvirtError:
            pool_text = f"pool {pool_name}: not made yet (the first boot makes it)"
    except HostError as e:
        return False, f"{head}: {e}"
    except libvirt.libvirtError as e:
        return False, f"{head}: {h.error('asking it', e)}"
    finally:
        h.close()
    major, minor, micro = version // 1000000, version // 1000 % 1000, version % 1000
    return True, (f"{head}: libvirt {major}.{minor}.{micro}, QEMU runs as uid {uid}, "
                  f"{pool_text}")


def report(hosts: List[FleetHost]) -> Tuple[bool, List[str]]:
    results = [check(h) for h in hosts]
    return all(ok for ok, _ in results), [line for _, line in results]
