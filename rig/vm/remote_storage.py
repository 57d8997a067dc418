"""What crosses to a remote host and back, through libvirt storage only.

Two kinds of directory pools on the host:

- printk-rig-<cache id>: one per rig cache (this machine and its cache
  path). Inputs are volumes named by their content (<sha256 prefix>-<what>:
  a kernel, an initramfs, a VM state image), uploaded once and reused by
  every later run of any harness with the same bytes. A run's outputs are
  volumes of its own (run-<domain>-console.log, ...), created empty (or
  with a restore's evidence so far) and owned by the host's QEMU user, which
  QEMU appends to; the harness downloads them when the domain has ended and
  deletes them.
- printk-rig-qemu-<digest>: the rig's QEMU build, the binary and the
  firmware it loads under their own names, since QEMU finds its firmware
  by name in a directory (-L). One per build: the digest covers every file.

An upload is checked: the volume is read back and its sha256 compared with
the file's. Only then is a marker volume (<name>.sha256, holding the hash)
written, which is what reuse trusts: a volume without its marker is a
broken upload and is replaced. Workers of one harness take a lock per host
and volume, so one of them uploads while the others wait.
"""
import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional
from xml.sax.saxutils import escape

from rig import rundir
from rig.artifacts.cache import locked, sha256_file
from rig.vm.remote_host import Host, HostError

POOL_ROOT = "/var/lib/libvirt/printk-rig"
CHUNK = 1 << 20
MARKER = ".sha256"


@dataclass
class Transfer:
    """What one run sent and fetched, for its run directory (transfer.json)."""
    sent: List[dict] = field(default_factory=list)
    fetched: List[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"sent": self.sent, "fetched": self.fetched,
                "bytes_uploaded": sum(s["bytes"] for s in self.sent if s["uploaded"]),
                "bytes_reused": sum(s["bytes"] for s in self.sent if not s["uploaded"]),
                "bytes_fetched": sum(f["bytes"] for f in self.fetched),
                "upload_s": round(sum(s["seconds"] for s in self.sent), 3),
                "fetch_s": round(sum(f["seconds"] for f in self.fetched), 3)}


def volume_xml(name: str, size: int, mode: int, uid: int, gid: int) -> str:
    # allocation 0: a sparse file, written by the upload (or by QEMU).
    return (f"<volume><name>{escape(name)}</name>"
            f"<capacity unit='bytes'>{size}</capacity><allocation unit='bytes'>0</allocation>"
            f"<target><format type='raw'/><permissions><mode>{mode:04o}</mode>"
            f"<owner>{uid}</owner><group>{gid}</group></permissions></target></volume>")


def cache_pool_name() -> str:
    """The pool of this machine's rig cache: the same on every host."""
    from rig import paths
    ident = f"{os.uname().nodename}:{paths.cache_root().resolve()}"
    return "printk-rig-" + hashlib.sha256(ident.encode()).hexdigest()[:12]


class Storage:
    """The rig's pools on one host, through its connection."""

    def __init__(self, host: Host, transfer: Optional[Transfer] = None):
        self.host = host
        self.conn = host.conn
        self.transfer = transfer if transfer is not None else Transfer()
        self.qemu_uid, self.qemu_gid = host.qemu_ids()
        self._pools: Dict[str, object] = {}

    # -- pools ------------------------------------------------------------
    def pool(self, name: str):
        """The named directory pool, defined, built and started if new."""
        import libvirt
        if name in self._pools:
            return self._pools[name]
        what = f"setting up storage pool {name}"
        # One worker of this harness sets a pool up at a time; another
        # harness doing it at once is met by looking again.
        with self._lock(name, ""):
            try:
                pool = self._define(name)
                if not pool.isActive():
                    try:
                        pool.create(0)       # starting it reads the directory
                    except libvirt.libvirtError:
                        if not pool.isActive():
                            raise
            except libvirt.libvirtError as e:
                raise self.host.error(what, e) from None
        self._pools[name] = pool
        return pool

    def _define(self, name: str):
        import libvirt
        try:
            return self.conn.storagePoolLookupByName(name)
        except libvirt.libvirtError as e:
            if e.get_error_code() != libvirt.VIR_ERR_NO_STORAGE_POOL:
                raise
        try:
            pool = self.conn.storagePoolDefineXML(
                f"<pool type='dir'><name>{name}</name><target>"
                f"<path>{POOL_ROOT}/{name}</path><permissions><mode>0755</mode>"
                "<owner>0</owner><group>0</group></permissions></target></pool>", 0)
        except libvirt.libvirtError:
            return self.conn.storagePoolLookupByName(name)   # defined meanwhile
        pool.build(0)
        pool.setAutostart(1)
        return pool

    def _lookup(self, pool, name: str):
        import libvirt
        try:
            return pool.storageVolLookupByName(name)
        except libvirt.libvirtError as e:
            if e.get_error_code() == libvirt.VIR_ERR_NO_STORAGE_VOL:
                return None
            raise

    # -- inputs -----------------------------------------------------------
    def put(self, pool_name: str, name: str, path: Path, mode: int = 0o644) -> str:
        """The host's path of volume `name` holding path's bytes: reused when
        the host holds it with a marker that matches, else uploaded and
        checked."""
        sha = sha256_file(path)
        size = path.stat().st_size
        pool = self.pool(pool_name)
        with self._lock(pool_name, name):
            t0 = time.monotonic()
            vol = self._reusable(pool, name, sha, size)
            uploaded = vol is None
            if uploaded:
                vol = self._upload(pool, name, path, sha, size, mode)
            self.transfer.sent.append({"volume": name, "pool": pool_name, "bytes": size,
                                       "sha256": sha, "uploaded": uploaded,
                                       "seconds": round(time.monotonic() - t0, 4)})
            return vol.path()

    def _reusable(self, pool, name: str, sha: str, size: int):
        import libvirt
        try:
            vol, marker = self._lookup(pool, name), self._lookup(pool, name + MARKER)
            if vol is not None and marker is not None and vol.info()[1] == size \
                    and self._read(marker).decode(errors="replace") == sha:
                return vol
        except libvirt.libvirtError as e:
            raise self.host.error(f"looking for volume {name}", e) from None
        return None

    def _upload(self, pool, name: str, path: Path, sha: str, size: int, mode: int):
        import libvirt
        what = f"uploading {path.name} ({size} bytes) as volume {name}"
        try:
            for stale in (name + MARKER, name):
                old = self._lookup(pool, stale)
                if old is not None:
                    old.delete(0)
            vol = pool.createXML(volume_xml(name, size, mode, 0, 0), 0)
            stream = self.conn.newStream(0)
            vol.upload(stream, 0, size, 0)
            with open(path, "rb") as f:
                stream.sendAll(lambda _s, n, _o: f.read(min(n, CHUNK)), None)
            stream.finish()
            back = hashlib.sha256(self._read(vol)).hexdigest()
            if back != sha:
                vol.delete(0)
                raise HostError(self.host, what, f"the volume reads back with sha256 {back}, "
                                f"not {sha}: the host's storage corrupts data")
            marker = pool.createXML(volume_xml(name + MARKER, len(sha), 0o644, 0, 0), 0)
            self._write(marker, sha.encode())
            return vol
        except libvirt.libvirtError as e:
            raise self.host.error(what, e) from None

    # -- a run's own volumes ---------------------------------------------
    def output(self, pool_name: str, name: str, prefix: bytes = b"") -> str:
        """A volume QEMU writes (its user's, mode 0600), starting with prefix."""
        import libvirt
        pool = self.pool(pool_name)
        try:
            old = self._lookup(pool, name)
            if old is not None:
                old.delete(0)
            vol = pool.createXML(volume_xml(name, len(prefix), 0o600, self.qemu_uid,
                                            self.qemu_gid), 0)
            if prefix:
                self._write(vol, prefix)
            return vol.path()
        except libvirt.libvirtError as e:
            raise self.host.error(f"creating volume {name} for QEMU's output", e) from None

    def clone(self, pool_name: str, source: str, name: str) -> str:
        """A copy of volume source, made on the host, for QEMU to write."""
        import libvirt
        pool = self.pool(pool_name)
        try:
            old = self._lookup(pool, name)
            if old is not None:
                old.delete(0)
            src = pool.storageVolLookupByName(source)
            vol = pool.createXMLFrom(volume_xml(name, src.info()[1], 0o600, self.qemu_uid,
                                                self.qemu_gid), src, 0)
            return vol.path()
        except libvirt.libvirtError as e:
            raise self.host.error(f"copying volume {source} to {name}", e) from None

    def fetch(self, pool_name: str, wanted: Dict[str, Path]) -> Dict[str, Optional[str]]:
        """Download volumes into their destinations (replacing them): volume
        name -> its sha256, or None when the host has no such volume. A
        download reads the file to its end, whatever size libvirt last saw
        (no pool refresh: libvirt refuses one while another worker uploads
        into the pool)."""
        pool = self.pool(pool_name)
        return {name: self._fetch(pool, name, dest) for name, dest in wanted.items()}

    def _fetch(self, pool, name: str, dest: Path) -> Optional[str]:
        import libvirt
        t0 = time.monotonic()
        try:
            vol = self._lookup(pool, name)
            if vol is None:
                return None
            h = hashlib.sha256()
            tmp = dest.with_name(dest.name + ".part")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, rundir.FILE_MODE)
            with os.fdopen(fd, "wb") as out:
                for chunk in self._chunks(vol):
                    h.update(chunk)
                    out.write(chunk)
            tmp.replace(dest)
        except libvirt.libvirtError as e:
            raise self.host.error(f"downloading volume {name}", e) from None
        self.transfer.fetched.append({"volume": name, "file": dest.name,
                                      "bytes": dest.stat().st_size,
                                      "sha256": h.hexdigest(),
                                      "seconds": round(time.monotonic() - t0, 4)})
        return h.hexdigest()

    def remove(self, pool_name: str, names: List[str]) -> None:
        """Delete a run's volumes; a host that is gone keeps them (its pool
        is the rig's, and a later run's output replaces a volume of the
        same name)."""
        import libvirt
        pool = self.pool(pool_name)
        for name in names:
            try:
                vol = self._lookup(pool, name)
                if vol is not None:
                    vol.delete(0)
            except libvirt.libvirtError:
                pass

    # -- streams ----------------------------------------------------------
    def _chunks(self, vol) -> Iterator[bytes]:
        stream = self.conn.newStream(0)
        vol.download(stream, 0, 0, 0)
        while True:
            data = stream.recv(CHUNK)
            if data in (b"", None):
                break
            if isinstance(data, int):       # -2: would block (not on a blocking stream)
                continue
            yield data
        stream.finish()

    def _read(self, vol) -> bytes:
        return b"".join(self._chunks(vol))

    def _write(self, vol, data: bytes) -> None:
        stream = self.conn.newStream(0)
        vol.upload(stream, 0, len(data), 0)
        view = memoryview(data)
        while view:
            sent = stream.send(bytes(view[:CHUNK]))
            view = view[sent:]
        stream.finish()

    def _lock(self, pool_name: str, name: str):
        key = hashlib.sha256(f"{self.host.uri}\0{pool_name}\0{name}".encode()).hexdigest()[:16]
        return locked(rundir.runtime_dir() / f"{rundir.VOLUME_LOCK_PREFIX}{key}.lock", remove=True)

