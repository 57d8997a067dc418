"""A libvirt host that shares nothing with the harness but libvirt's API
(qemu+ssh://, qemu+tls://, qemu+tcp://): its connection, named for errors.

libvirt's client needs an event loop for keepalives, console streams and
QEMU monitor events; one runs in a daemon thread per process. Every
failure on the host becomes a HostError whose first line names the host,
its URI and what the rig was doing there.
"""
import threading
import urllib.parse
from typing import Callable, List, Optional

from rig.faults import RigFault

KEEPALIVE_INTERVAL_S = 2
KEEPALIVE_COUNT = 3            # a silent host is lost after about 6 s

_loop_lock = threading.Lock()
_loop_started = False


class HostError(RigFault, RuntimeError):
    """Something failed on a remote libvirt host; the message names it."""

    def __init__(self, host: "Host", what: str, detail: str):
        self.host_name = host.name
        self.uri = host.uri
        self.what = what
        super().__init__(f"host {host.name} ({host.uri}): {what}: {detail}")


def is_remote(uri: str) -> bool:
    """A URI naming a host (qemu+tcp://h/system) rather than this machine's
    libvirtd (qemu:///system)."""
    return bool(urllib.parse.urlsplit(uri).hostname)


def host_name(uri: str) -> str:
    return urllib.parse.urlsplit(uri).hostname or uri


def event_loop() -> None:
    """libvirt's default event loop, in a daemon thread; once per process,
    before the first connection."""
    global _loop_started
    import libvirt
    with _loop_lock:
        if _loop_started:
            return
        libvirt.virEventRegisterDefaultImpl()

        def run() -> None:
            while True:
                libvirt.virEventRunDefaultImpl()
        threading.Thread(target=run, name="libvirt-events", daemon=True).start()
        _loop_started = True


CLOSE_REASONS = {0: "the host closed the connection (libvirtd gone?)",
                 1: "no keepalive answer: the host or the network is down",
                 2: "the connection failed", 3: "the harness closed it"}


class Host:
    """One connection to a remote libvirt host."""

    def __init__(self, uri: str, name: Optional[str] = None):
        self.uri = uri
        self.name = name or host_name(uri)
        self.conn = None
        self.lost: Optional[str] = None       # why the connection closed, once it did
        # Called (in libvirt's event thread) with the reason when it closes.
        self.on_lost: List[Callable[[str], None]] = []

    def error(self, what: str, e: BaseException) -> HostError:
        detail = self.lost if self.lost else str(e)
        return HostError(self, what, detail)

    def connect(self):
        import libvirt
        event_loop()
        libvirt.registerErrorHandler(lambda *_: None, None)
        try:
            self.conn = libvirt.open(self.uri)
        except libvirt.libvirtError as e:
            raise HostError(self, "cannot connect", f"{e}; is its libvirtd running and "
                            "listening? (docs/fleet.md)") from None
        self.conn.setKeepAlive(KEEPALIVE_INTERVAL_S, KEEPALIVE_COUNT)
        self.conn.registerCloseCallback(self._closed, None)
        return self.conn

    def _closed(self, _conn, reason: int, _opaque) -> None:
        self.lost = CLOSE_REASONS.get(reason, f"connection closed (reason {reason})")
        for notify in self.on_lost:
            notify(self.lost)

    def alive(self) -> bool:
        return self.conn is not None and self.lost is None and self.conn.isAlive() == 1

    def close(self) -> None:
        import libvirt
        if self.conn is None:
            return
        try:
            self.conn.unregisterCloseCallback()
        except libvirt.libvirtError:
            pass
        try:
            self.conn.close()
        except libvirt.libvirtError:
            pass
        self.conn = None

    def qemu_ids(self) -> "tuple[int, int]":
        """uid and gid the host runs QEMU as: the DAC model's base label in
        its capabilities (+64055:+64055 on Debian)."""
        import xml.etree.ElementTree as ET
        import libvirt
        try:
            caps = ET.fromstring(self.conn.getCapabilities())
        except libvirt.libvirtError as e:
            raise self.error("reading its capabilities", e) from None
        for model in caps.iter("secmodel"):
            if model.findtext("model") == "dac":
                label = model.find("baselabel")
                if label is not None and label.text:
                    uid, gid = label.text.split(":")
                    return int(uid.lstrip("+")), int(gid.lstrip("+"))
        raise HostError(self, "reading its capabilities",
                        "no DAC security model: the rig needs QEMU to run as libvirt's "
                        "unprivileged user, with DAC labels")
