"""Reads on their own read-only connections (WAL lets them run beside the writer).

Each pool thread opens one `mode=ro` connection on first use. A read runs inside a deferred
transaction so its several SELECTs see one consistent snapshot; it sees every write whose
commit returned before the read began (read-your-acknowledged-writes).

A read method may declare a `follow_up` (e.g. recall bumping recall counts): after the read
answered, `(method, body)` is handed to `on_follow_up` (typically the group-commit writer,
fire and forget). Without a hook the follow-up is skipped.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from . import db
from .clock import Clock, SystemClock
from .errors import NotFound
from .surface import METHODS
from .workspace import parse_args


class ReadPool:
    def __init__(self, path: str | Path, threads: int = 2, clock: Clock | None = None,
                 on_follow_up: Callable[[str, dict], None] | None = None):
        self.path = Path(path)
        self.on_follow_up = on_follow_up
        self.clock = clock or SystemClock()
        self._local = threading.local()
        self._conns: list = []
        self._conns_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="reader")

    def _conn(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = db.connect(self.path, readonly=True)
            self._local.conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    def read(self, method_name: str, body: dict | None) -> tuple[Any, dict]:
        """Run one read method now, on the calling thread's connection: (result, timings)."""
        method = METHODS.get(method_name)
        if method is None or method.access != "read":
            raise NotFound(f"unknown read method {method_name!r}")
        args = parse_args(method, body)
        started = time.perf_counter()
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            result = method.handler(conn, args, self.clock.now_ms())
        finally:
            conn.execute("COMMIT")
        timings = {"engine_ms": (time.perf_counter() - started) * 1e3}
        follow_up = getattr(method, "follow_up", None)
        if follow_up is not None and self.on_follow_up is not None:
            self.on_follow_up(*follow_up(result))
        return result, timings

    def submit(self, method_name: str, body: dict | None) -> Future:
        enqueued = time.perf_counter()

        def job():
            started = time.perf_counter()
            result, timings = self.read(method_name, body)
            timings["queue_ms"] = (started - enqueued) * 1e3
            return result, timings
        return self._pool.submit(job)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        with self._conns_lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()
