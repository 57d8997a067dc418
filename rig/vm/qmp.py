"""Minimal QMP client: JSON messages over QEMU's unix socket.

No QMP library is packaged for Debian bookworm, and the protocol is small:
a greeting, qmp_capabilities, then one JSON object per line, where replies
carry the "id" of their command and events may arrive at any time.
"""
import json
import select
import socket
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from rig.faults import RigFault


class QMPError(RigFault, RuntimeError):
    """QEMU answered a command with an error, or the socket broke."""


class Framer:
    """Splits a byte stream into QMP messages (one JSON object per line)."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> List[Dict[str, Any]]:
        self._buf += data
        messages = []
        while b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            line = line.strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
            except ValueError as e:
                raise QMPError(f"QEMU sent a line that is not JSON: {line[:200]!r}") from e
            if not isinstance(msg, dict):
                raise QMPError(f"QEMU sent JSON that is not an object: {line[:200]!r}")
            messages.append(msg)
        return messages


def encode_command(name: str, args: Optional[Dict[str, Any]], cmd_id: int) -> bytes:
    msg: Dict[str, Any] = {"execute": name, "id": cmd_id}
    if args:
        msg["arguments"] = args
    return json.dumps(msg).encode() + b"\r\n"


class QMPClient:
    def __init__(self, path: str) -> None:
        self.path = path
        self.sock: Optional[socket.socket] = None
        self.framer = Framer()
        self.events: List[Dict[str, Any]] = []
        self.greeting: Optional[Dict[str, Any]] = None
        self._pending: List[Dict[str, Any]] = []
        self._next_id = 1
        self.closed = False

    def connect(self, timeout: float, alive: Optional[Callable[[], bool]] = None) -> None:
        """Connect (retrying until QEMU has created the socket) and negotiate;
        alive() says whether QEMU still runs: one that exited is not waited for."""
        deadline = time.monotonic() + timeout
        last_err: Optional[Exception] = None
        while time.monotonic() < deadline:
            if alive is not None and not alive():
                raise QMPError("QEMU exited during start-up, before its QMP socket was up")
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(self.path)
                self.sock = s
                break
            except OSError as e:
                s.close()
                last_err = e
                time.sleep(0.05)
        if self.sock is None:
            raise QMPError(f"no QMP socket at {self.path} after {timeout:.0f} s ({last_err})")
        self.greeting = self._next_message(deadline)
        if "QMP" not in self.greeting:
            raise QMPError(f"unexpected QMP greeting: {self.greeting}")
        self.execute("qmp_capabilities", timeout=max(1.0, deadline - time.monotonic()))

    def _recv(self, timeout: Optional[float]) -> bool:
        """Read what is there (waiting up to timeout); False on EOF."""
        assert self.sock is not None
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except (socket.timeout, BlockingIOError):
            return True
        except OSError:
            data = b""
        if not data:
            self.closed = True
            return False
        for msg in self.framer.feed(data):
            if "event" in msg:
                self.events.append(msg)
            else:
                self._pending.append(msg)
        return True

    def _next_message(self, deadline: float) -> Dict[str, Any]:
        while not self._pending:
            left = deadline - time.monotonic()
            if left <= 0:
                raise QMPError("timed out waiting for QEMU on QMP")
            if not self._recv(left):
                raise QMPError("QEMU closed the QMP socket")
        return self._pending.pop(0)

    def execute(self, name: str, args: Optional[Dict[str, Any]] = None,
                timeout: float = 10.0, fds: Sequence[int] = ()) -> Any:
        """Run a command; fds go along as SCM_RIGHTS (getfd takes one)."""
        if self.sock is None or self.closed:
            raise QMPError(f"QMP not connected, cannot run {name}")
        cmd_id = self._next_id
        self._next_id += 1
        message = encode_command(name, args, cmd_id)
        if fds:
            socket.send_fds(self.sock, [message], list(fds))
        else:
            self.sock.sendall(message)
        deadline = time.monotonic() + timeout
        while True:
            msg = self._next_message(deadline)
            if msg.get("id") != cmd_id:
                continue
            if "error" in msg:
                err = msg["error"]
                raise QMPError(f"{name}: {err.get('class')}: {err.get('desc')}")
            return msg.get("return")

    def poll(self) -> None:
        """Collect events that have arrived, without waiting."""
        if self.sock is not None and not self.closed:
            while self._recv(0.0) and self._has_more():
                pass

    def _has_more(self) -> bool:
        assert self.sock is not None
        return bool(select.select([self.sock], [], [], 0)[0])

    def drain(self, timeout: float = 1.0) -> None:
        """Read until EOF or timeout: the last events before QEMU exits."""
        deadline = time.monotonic() + timeout
        while self.sock is not None and not self.closed and time.monotonic() < deadline:
            self._recv(max(0.01, deadline - time.monotonic()))

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
