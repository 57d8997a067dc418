"""A remote domain's serial console, read live through libvirt's console
stream and handed to pexpect as one end of a socket pair, so that the
phases, hang detection and last-lines reports work as with a local QEMU.

The stream's callback runs in libvirt's event thread; it only queues what
it reads, and a writer thread of its own passes it on, so a harness that
is busy elsewhere (a QMP command, a download) never stalls libvirt's
event loop, and with it the connection's keepalives. The stream's end
(QEMU exited, the domain was destroyed, the connection was lost) closes the
pair: pexpect then sees EOF.
"""
import queue
import socket
import threading
from typing import Optional

EVENTS = ("READABLE", "HANGUP", "ERROR")


class ConsoleStream:
    def __init__(self, conn, dom, device: Optional[str]):
        import libvirt
        self.harness_end, self._ours = socket.socketpair()
        self._queue: "queue.Queue[Optional[bytes]]" = queue.Queue()
        self.error: Optional[str] = None
        self.stream = conn.newStream(libvirt.VIR_STREAM_NONBLOCK)
        # FORCE: a console left open by a dead harness's session is taken over.
        dom.openConsole(device, self.stream, libvirt.VIR_DOMAIN_CONSOLE_FORCE)
        mask = 0
        for name in EVENTS:
            mask |= getattr(libvirt, f"VIR_STREAM_EVENT_{name}")
        self.stream.eventAddCallback(mask, self._on_event, None)
        self._writer = threading.Thread(target=self._write, name="console-writer",
                                        daemon=True)
        self._writer.start()

    def _on_event(self, stream, events: int, _opaque) -> None:
        import libvirt
        if events & libvirt.VIR_STREAM_EVENT_READABLE:
            while True:
                try:
                    data = stream.recv(65536)
                except libvirt.libvirtError as e:
                    self._end(str(e))
                    return
                if data == -2:           # nothing more for now
                    break
                if not data:
                    self._end(None)
                    return
                self._queue.put(data)
        if events & (libvirt.VIR_STREAM_EVENT_HANGUP | libvirt.VIR_STREAM_EVENT_ERROR):
            self._end("the console stream broke" if events & libvirt.VIR_STREAM_EVENT_ERROR
                      else None)

    def lost(self, why: str) -> None:
        """The connection is gone: no more console will come."""
        self._end(why)

    def _end(self, error: Optional[str]) -> None:
        import libvirt
        if error and self.error is None:
            self.error = error
        try:
            self.stream.eventRemoveCallback()
        except libvirt.libvirtError:
            pass
        self._queue.put(None)

    def _write(self) -> None:
        while True:
            data = self._queue.get()
            if data is None:
                break
            try:
                self._ours.sendall(data)
            except OSError:          # the harness closed its end
                break
        self._ours.close()

    def close(self) -> None:
        """After the domain is gone: let the stream and the writer go."""
        import libvirt
        try:
            self.stream.abort()
        except libvirt.libvirtError:
            pass
        self._end(None)
        self._writer.join(timeout=5)
