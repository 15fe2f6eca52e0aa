"""The Litestream daemon's control socket: plain HTTP/1.1 with JSON bodies over a Unix socket,
spoken with the standard library.

Every workspace actor talks to its node's daemon (register at a wake, a sync per write batch
in sync mode, unregister at hibernation). An HTTP library costs a warm spare twice: importing
it lengthens the spare's start, and its first client (which builds a TLS context even for a
Unix socket) lands on the first bind, the wake a user waits for. `http.client` over an
`AF_UNIX` socket costs neither.

Connections are kept open and reused (a sync per batch must not pay a connect); any thread may
call (the writer confirms, the event loop reads the lag, hibernation unregisters), each request
taking an idle connection or making one.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
from pathlib import Path
from typing import Any, cast

from minisphere.errors import ReplicationUnconfirmed

CONTROL_TIMEOUT_S = 10.0  # a register / unregister / list over the socket
ALIVE_TIMEOUT_S = 1.0  # "is the daemon there?"
IDLE_CONNECTIONS_KEPT = 4  # per process and daemon: about the threads that call at once
# what a request to a daemon that is gone, restarting or stuck raises
CONTROL_ERRORS: tuple[type[BaseException], ...] = (OSError, http.client.HTTPException)
# a kept connection the daemon closed meanwhile (it restarted, or timed the connection out):
# the request never reached it, so it is sent once more on a new connection
_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)
# a JSON object the daemon sends or is sent (its fields are Litestream's, read where used)
DaemonJson = dict[str, Any]


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, socket_path: str, timeout_s: float):
        super().__init__("litestream", timeout=timeout_s)
        self.socket_path = socket_path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.socket_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class ReplicaControl:
    """The daemon's control socket."""

    def __init__(self, socket_path: Path):
        self.socket_path = Path(socket_path)
        self._idle: list[_UnixConnection] = []
        self._lock = threading.Lock()

    def _request(
        self, verb: str, path: str, body: DaemonJson | None, timeout_s: float
    ) -> tuple[int, bytes]:
        with self._lock:
            kept = self._idle.pop() if self._idle else None
        if kept is not None:
            try:
                return self._send(kept, verb, path, body, timeout_s)
            except _STALE:
                pass
        return self._send(
            _UnixConnection(str(self.socket_path), timeout_s), verb, path, body, timeout_s
        )

    def _send(
        self,
        connection: _UnixConnection,
        verb: str,
        path: str,
        body: DaemonJson | None,
        timeout_s: float,
    ) -> tuple[int, bytes]:
        connection.timeout = timeout_s
        if connection.sock is not None:
            connection.sock.settimeout(timeout_s)
        payload = None if body is None else json.dumps(body).encode()
        try:
            connection.request(
                verb,
                path,
                body=payload,
                headers={"Content-Type": "application/json"} if payload else {},
            )
            answer = connection.getresponse()
            data = answer.read()
        except BaseException:
            connection.close()
            raise
        with self._lock:
            if answer.will_close or len(self._idle) >= IDLE_CONNECTIONS_KEPT:
                connection.close()
            else:
                self._idle.append(connection)
        return answer.status, data

    def _get(self, path: str) -> DaemonJson:
        return self._answer("GET", path, None, CONTROL_TIMEOUT_S)

    def _post(
        self, path: str, body: DaemonJson, timeout_s: float = CONTROL_TIMEOUT_S
    ) -> DaemonJson:
        return self._answer("POST", path, body, timeout_s)

    def _answer(
        self, verb: str, path: str, body: DaemonJson | None, timeout_s: float
    ) -> DaemonJson:
        """The daemon's JSON answer; ReplicationUnconfirmed with its words unless 200."""
        status, data = self._request(verb, path, body, timeout_s)
        if status != 200:
            raise ReplicationUnconfirmed(
                f"litestream {path}: {status} {data[:200].decode(errors='replace')}"
            )
        # the control API answers a JSON object to every request
        return cast(DaemonJson, json.loads(data or b"{}"))

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def __del__(self) -> None:
        # a control dropped without close() (a daemon object a caller let go of) ends its kept
        # connections itself, as a file object does, rather than leave them to the collector
        with contextlib.suppress(Exception):
            self.close()

    def alive(self) -> bool:
        try:
            return self._request("GET", "/info", None, ALIVE_TIMEOUT_S)[0] == 200
        except CONTROL_ERRORS:
            return False

    def info(self) -> DaemonJson:
        return self._get("/info")

    def databases(self) -> list[DaemonJson]:
        listed: list[DaemonJson] = self._get("/list").get("databases") or []
        return listed

    def register(self, db_path: Path, url: str) -> None:
        self._post("/register", {"path": str(db_path), "replica_url": url})

    def unregister(self, db_path: Path) -> None:
        self._post("/unregister", {"path": str(db_path)})

    def nudge(self, db_path: Path) -> DaemonJson:
        """Hand the file's new frames to the daemon without waiting for the replica; the
        answer's `txid` and `replicated_txid` say how far behind the replica is."""
        return self._post("/sync", {"path": str(db_path), "wait": False})

    def sync(self, db_path: Path, timeout_s: float) -> DaemonJson:
        """Ship what is committed and wait until the replica has it (`replicated_txid`)."""
        seconds = max(1, round(timeout_s))
        return self._post(
            "/sync",
            {"path": str(db_path), "wait": True, "timeout": seconds},
            timeout_s=timeout_s + 1.0,
        )
