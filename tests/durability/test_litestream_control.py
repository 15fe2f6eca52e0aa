"""The control socket's client against a real HTTP/1.1 server on a Unix socket (the standard
library's, standing in for the daemon's socket so it can be restarted and made to fail at
will; the daemon itself is driven in test_replication.py)."""

from __future__ import annotations

import contextlib
import json
import socket
import socketserver
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from minisphere.durability.litestream_control import ReplicaControl
from minisphere.errors import ReplicationUnconfirmed


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the daemon's Go server

    def address_string(self) -> str:  # a Unix socket has no client address
        return "unix"

    def log_message(self, *args) -> None:
        pass

    def _answer(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer(200, {"databases": [{"path": "/a.db"}]} if self.path == "/list" else {})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body.get("path") == "/refused.db":
            self._answer(400, {"error": "not registered"})
        else:
            self._answer(200, {"txid": 7, "replicated_txid": 7, "echo": body})


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: Path):
        super().__init__(str(path), _Handler)
        self.accepted = []

    @property
    def connections(self) -> int:
        return len(self.accepted)

    def get_request(self):
        request = super().get_request()
        self.accepted.append(request[0])
        return request

    def stop(self) -> None:
        """Gone as a killed daemon is: no new connections, and the open ones closed."""
        self.shutdown()
        self.server_close()
        for connection in self.accepted:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def serving(tmp_path):
    servers = []

    def start() -> _Server:
        path = tmp_path / "control.sock"
        path.unlink(missing_ok=True)
        server = _Server(path)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield tmp_path / "control.sock", start
    for server in servers:
        server.stop()


def test_requests_reuse_one_kept_connection_instead_of_connecting_per_sync(serving):
    path, start = serving
    server = start()
    control = ReplicaControl(path)
    for _ in range(5):
        assert control.sync(Path("/a.db"), 2.0)["replicated_txid"] == 7
    assert control.databases() == [{"path": "/a.db"}]
    assert server.connections == 1
    control.close()


def test_a_daemon_restarted_behind_a_kept_connection_is_reached_on_a_new_one(serving):
    path, start = serving
    first = start()
    control = ReplicaControl(path)
    assert control.alive()
    first.stop()  # the kept connection's peer is gone
    second = start()
    answer = control.nudge(Path("/a.db"))
    assert answer["echo"] == {"path": "/a.db", "wait": False}
    assert second.connections == 1
    control.close()


def test_a_refused_request_raises_replication_unconfirmed_with_the_daemons_words(serving):
    path, start = serving
    start()
    control = ReplicaControl(path)
    with pytest.raises(ReplicationUnconfirmed, match=r"400.*not registered"):
        control.register(Path("/refused.db"), "file:///replica")
    control.close()


def test_no_daemon_is_not_alive_and_a_call_raises_an_os_error(tmp_path):
    control = ReplicaControl(tmp_path / "absent.sock")
    assert control.alive() is False
    with pytest.raises(OSError):
        control.sync(Path("/a.db"), 1.0)
