"""QMP of a remote domain through libvirt's QEMU monitor passthrough
(libvirt_qemu.qemuMonitorCommand, qemuMonitorEventRegister), with the
interface of rig.vm.qmp.QMPClient, so that the phases, triggers, restores
and vCPU stacks use either. libvirt marks such a domain tainted
("custom-monitor"); its transient domain dies with the run anyway.

What passthrough cannot carry is a file descriptor (getfd): a remote
restore loads its state from a volume on the host by path instead
(rig.vm.machine_remote).
"""
import json
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from rig.vm.qmp import QMPError


class PassthroughQMP:
    def __init__(self, conn, dom, where: str):
        self.conn = conn
        self.dom = dom
        self.where = where               # the host and domain, for errors
        self.events: List[Dict[str, Any]] = []
        self.closed = False
        self._lock = threading.Lock()
        self._callback: Optional[int] = None
        self.greeting = {"QMP": {"via": "libvirt monitor passthrough"}}

    def connect(self, timeout: float, alive: Optional[Callable[[], bool]] = None) -> None:
        import libvirt
        import libvirt_qemu
        try:
            self._callback = libvirt_qemu.qemuMonitorEventRegister(
                self.conn, self.dom, None, self._on_event, None, 0)
        except libvirt.libvirtError as e:
            raise QMPError(f"{self.where}: cannot receive QEMU's events: {e}") from None

    def _on_event(self, _conn, _dom, event: str, seconds: int, micros: int,
                  details, _opaque) -> None:
        if isinstance(details, str):
            try:
                details = json.loads(details) if details else {}
            except ValueError:
                details = {"raw": details}
        msg = {"event": event, "timestamp": {"seconds": seconds, "microseconds": micros}}
        if details:
            msg["data"] = details
        with self._lock:
            self.events.append(msg)

    def execute(self, name: str, args: Optional[Dict[str, Any]] = None,
                timeout: float = 10.0, fds: Sequence[int] = ()) -> Any:
        import libvirt
        import libvirt_qemu
        if fds:
            raise QMPError(f"{name}: a file descriptor cannot cross libvirt's monitor "
                           "passthrough to a remote host")
        if self.closed:
            raise QMPError(f"QMP not connected, cannot run {name}")
        command: Dict[str, Any] = {"execute": name}
        if args:
            command["arguments"] = args
        try:
            reply = json.loads(libvirt_qemu.qemuMonitorCommand(
                self.dom, json.dumps(command), 0))
        except libvirt.libvirtError as e:
            raise QMPError(f"{name} on {self.where}: {e}") from None
        if "error" in reply:
            err = reply["error"]
            raise QMPError(f"{name}: {err.get('class')}: {err.get('desc')}")
        return reply.get("return")

    def poll(self) -> None:
        """Events arrive by themselves (libvirt's event thread)."""

    def drain(self, timeout: float = 1.0) -> None:
        """Give the last events before QEMU's exit time to arrive."""
        deadline = time.monotonic() + timeout
        seen = -1
        while time.monotonic() < deadline:
            with self._lock:
                n = len(self.events)
            if n == seen:
                break
            seen = n
            time.sleep(0.1)

    def close(self) -> None:
        import libvirt
        import libvirt_qemu
        if self._callback is not None:
            try:
                libvirt_qemu.qemuMonitorEventDeregister(self.conn, self._callback)
            except libvirt.libvirtError:
                pass
            self._callback = None
        self.closed = True
