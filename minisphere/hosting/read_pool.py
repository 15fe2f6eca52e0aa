"""Reads on their own read-only connections (WAL lets them run beside the writer).

Each pool thread opens one `mode=ro` connection on first use. A read runs inside a deferred
transaction so its several SELECTs see one consistent snapshot; it sees every write whose
commit returned before the read began (read-your-acknowledged-writes). The workspace's hooks
(`engine/hooks.py`) run here too: a bound recall embeds its query on the pool thread, before
its transaction, and never touches the writer's connection or lock.

A read the hooks start on arrival (`started_on_arrival`: a bound recall's query embedding) can
be prepared by the caller (`start`) before it is submitted, so the embedding is under way while
the read waits for a thread.

The pool also runs the `prepare` step of writes (`prepare`), on the same threads and
connections, so a bound capture is embedded before it is queued for the writer.

A read method may declare a `follow_up` (e.g. recall bumping recall counts): after the read
answered, `(method, body)` is handed to `on_follow_up` (typically the group-commit writer,
fire and forget). Without a hook the follow-up is skipped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from minisphere.engine import db
from minisphere.engine.clock import Clock, SystemClock
from minisphere.engine.hooks import NO_HOOKS, NOT_PREPARED, WorkspaceHooks
from minisphere.engine.methods import find_method, parse_args
from minisphere.errors import MiniSphereError, NotFound
from minisphere.wire.timings import CallTimings

DEFAULT_READ_THREADS = 2


class ReadPool:
    def __init__(
        self,
        path: str | Path,
        threads: int = DEFAULT_READ_THREADS,
        clock: Clock | None = None,
        on_follow_up: Callable[[str, dict[str, Any]], None] | None = None,
        hooks: WorkspaceHooks = NO_HOOKS,
    ):
        self.path = Path(path)
        self.on_follow_up = on_follow_up
        self.clock = clock or SystemClock()
        self.hooks = hooks
        self._local = threading.local()
        self._conns: list[db.Connection] = []
        self._conns_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="reader")

    def _conn(self) -> db.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = db.connect(self.path, readonly=True)
            self.hooks.prepare_connection(conn)
            self._local.conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    def start(self, method_name: str, body: dict[str, Any] | None) -> Any:
        """The hooks' prepared value of a read they start on arrival, made now on the calling
        thread with no connection; NOT_PREPARED for any other read (or invalid arguments:
        the read reports them)."""
        if method_name not in self.hooks.started_on_arrival:
            return NOT_PREPARED
        try:
            args = parse_args(find_method(method_name), body)
        except MiniSphereError:
            return NOT_PREPARED
        return self.hooks.prepare([(method_name, args)], None)[0]

    def read(
        self, method_name: str, body: dict[str, Any] | None, prepared: Any = NOT_PREPARED
    ) -> tuple[Any, CallTimings]:
        """Run one read method now, on the calling thread's connection: (result, timings).
        `prepared`: what `start` made for it, if it ran."""
        method = find_method(method_name)
        if method.access != "read":
            raise NotFound(f"unknown read method {method_name!r}")
        args = parse_args(method, body)
        started = time.perf_counter()
        conn = self._conn()
        handler = method.handler
        if method_name in self.hooks.hooked:  # outside the read transaction
            if prepared is NOT_PREPARED:
                prepared = self.hooks.prepare([(method_name, args)], conn)[0]
            handler = self.hooks.handler(method, prepared) or handler
        conn.execute("BEGIN")
        try:
            result = handler(conn, args, self.clock.now_ms())
        finally:
            conn.execute("COMMIT")
        timings: CallTimings = {"engine_ms": (time.perf_counter() - started) * 1e3}
        if method.follow_up is not None and self.on_follow_up is not None:
            self.on_follow_up(*method.follow_up(result))
        return result, timings

    def submit(
        self, method_name: str, body: dict[str, Any] | None, prepared: Any = NOT_PREPARED
    ) -> Future[tuple[Any, CallTimings]]:
        enqueued = time.perf_counter()

        def job() -> tuple[Any, CallTimings]:
            started = time.perf_counter()
            result, timings = self.read(method_name, body, prepared)
            timings["queue_ms"] = (started - enqueued) * 1e3
            return result, timings

        return self._pool.submit(job)

    def warm(self) -> Future[tuple[Any, CallTimings]]:
        """Start a reader thread, open its connection and answer one cheap read on it now, so
        the first call finds them ready: on a woken actor, starting the thread, opening the
        connection and building the read's argument validator would otherwise land inside its
        first call. Reads nothing a caller sees and writes nothing (getCount has no follow-up)."""
        return self._pool.submit(self.read, "getCount", {})

    # ---- the prepare step of writes ------------------------------------------------------------
    def prepare_now(self, method_name: str, body: dict[str, Any] | None) -> Any:
        """The hooks' prepared value for one write (None when its arguments are invalid: the
        writer then reports them)."""
        try:
            args = parse_args(find_method(method_name), body)
        except MiniSphereError:
            return None
        return self.hooks.prepare([(method_name, args)], self._conn())[0]

    def prepare(self, method_name: str, body: dict[str, Any] | None) -> Future[Any]:
        return self._pool.submit(self.prepare_now, method_name, body)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        with self._conns_lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()
