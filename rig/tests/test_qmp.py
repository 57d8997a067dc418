import json
import os
import socket
import tempfile
import threading

import pytest

from rig.vm.qmp import Framer, QMPClient, QMPError, encode_command


def test_framer_splits_partial_and_joined_messages():
    f = Framer()
    assert f.feed(b'{"QMP": {"version"') == []
    msgs = f.feed(b': 1}}\r\n{"return": {}, "id": 1}\r\n{"event": "STOP"')
    assert msgs == [{"QMP": {"version": 1}}, {"return": {}, "id": 1}]
    assert f.feed(b', "data": {}}\n') == [{"event": "STOP", "data": {}}]


def test_framer_rejects_garbage_with_the_line():
    with pytest.raises(QMPError, match="not JSON"):
        Framer().feed(b"hello\n")
    with pytest.raises(QMPError, match="not an object"):
        Framer().feed(b"[1, 2]\n")


def test_encode_command():
    raw = encode_command("inject-nmi", None, 7)
    assert raw.endswith(b"\r\n")
    assert json.loads(raw) == {"execute": "inject-nmi", "id": 7}
    assert json.loads(encode_command("x", {"a": 1}, 1))["arguments"] == {"a": 1}


class FakeQemu(threading.Thread):
    """A QMP server on a unix socket that speaks like QEMU: greeting, events, replies."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(1)
        self.received = []

    def run(self):
        conn, _ = self.srv.accept()
        conn.sendall(b'{"QMP": {"version": {}, "capabilities": []}}\r\n')
        f = conn.makefile("rb")
        for line in f:
            cmd = json.loads(line)
            self.received.append(cmd)
            if cmd["execute"] == "bogus":
                reply = {"error": {"class": "CommandNotFound", "desc": "no bogus"},
                         "id": cmd["id"]}
            else:
                reply = {"return": {"status": "running"}, "id": cmd["id"]}
            # An event before the reply, as QEMU may send one at any time.
            conn.sendall(b'{"event": "RESUME", "data": {}}\r\n' + json.dumps(reply).encode()
                         + b"\r\n")
        conn.close()


def test_client_negotiates_collects_events_and_raises_errors():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "qmp.sock")
        srv = FakeQemu(path)
        srv.start()
        c = QMPClient(path)
        c.connect(timeout=5)
        assert srv.received[0]["execute"] == "qmp_capabilities"
        assert c.execute("query-status") == {"status": "running"}
        assert [e["event"] for e in c.events] == ["RESUME", "RESUME"]
        with pytest.raises(QMPError, match="CommandNotFound: no bogus"):
            c.execute("bogus")
        c.close()


def test_connect_without_server_names_the_socket():
    with tempfile.TemporaryDirectory() as d:
        with pytest.raises(QMPError, match="no QMP socket at .*nothing.sock"):
            QMPClient(os.path.join(d, "nothing.sock")).connect(timeout=0.3)
