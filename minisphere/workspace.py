"""One workspace = one SQLite file. The plain-Python engine the Ray actors wrap."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable

from pydantic import ValidationError

from . import db
from .clock import Clock, SystemClock
from .constants import DEFAULT_SYNCHRONOUS, VECTOR_BINDING_META_KEY
from .errors import InvalidArgument, MiniSphereError, NotFound, WorkspaceClosed
from .surface import INTERNAL_METHODS, METHODS, Method


def describe_validation_error(method: str, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "body"
        parts.append(f"{where}: {err['msg']}")
    return f"{method}: " + "; ".join(parts)


def has_vector_binding(conn) -> bool:
    """Whether the file records a vector binding (plain SQL: no extension, no model)."""
    return conn.execute("SELECT 1 FROM workspace_meta WHERE key = ?",
                        (VECTOR_BINDING_META_KEY,)).fetchone() is not None


def parse_args(method: Method, body: Any):
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise InvalidArgument(f"{method.name}: arguments must be a JSON object")
    try:
        return method.args.model_validate(body)
    except ValidationError as exc:
        raise InvalidArgument(describe_validation_error(method.name, exc)) from None


class Workspace:
    """Open a workspace file (creating and migrating it), then `call(method, args)`.

    Writes run in `BEGIN IMMEDIATE … COMMIT` on the one writer connection: a failure anywhere
    in a write rolls the whole write back. `run_batch` commits many writes in one transaction
    (group commit) with a savepoint around each, so one bad write never spoils the others.
    """

    def __init__(self, path: str | Path, *, clock: Clock | None = None,
                 synchronous: str = DEFAULT_SYNCHRONOUS, embedder=None, vector_settings=None):
        self.path = Path(path)
        self.clock = clock or SystemClock()
        self._lock = threading.RLock()
        self._conn = db.connect(self.path, synchronous=synchronous)
        self.vectors = None  # optional vector binding (minisphere/vectors); None: never imported
        try:
            self.schema_version = db.migrate(self._conn, self.clock.now_ms())
            if embedder is not None or has_vector_binding(self._conn):
                from .vectors.binding import attach
                self.vectors = attach(self, embedder, vector_settings)
        except BaseException:
            self._conn.close()
            raise

    # ---- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @property
    def closed(self) -> bool:
        return self._conn is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def conn(self):
        if self._conn is None:
            raise WorkspaceClosed(f"workspace {self.path.name} is closed")
        return self._conn

    @contextmanager
    def transaction(self):
        with self._lock:
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # ---- dispatch ----------------------------------------------------------------------------
    def call(self, method_name: str, body: dict | None = None) -> Any:
        method = METHODS.get(method_name)
        if method is None:
            raise NotFound(f"unknown method {method_name!r}")
        args = parse_args(method, body)
        if self.vectors is not None and method_name in self.vectors.hooked:
            return self.vectors.call(method, args)  # embeds first, then the plain path
        if method.access == "read":
            with self._lock:
                result = method.handler(self.conn, args, self.clock.now_ms())
            if method.follow_up is not None:
                self.run_batch([method.follow_up(result)])
            return result
        with self.transaction() as conn:
            return method.handler(conn, args, self.clock.now_ms())

    def run_batch(self, calls: Iterable[tuple[str, dict]]) -> list[tuple[bool, Any]]:
        """Group commit: every call in one transaction, each under its own savepoint.

        Returns (ok, result-or-error) per call, in order. Only errors of the call itself are
        captured; a failure of the commit itself propagates (nothing in the group is durable).
        """
        outcomes: list[tuple[bool, Any]] = []
        calls = list(calls)
        prepared = self.vectors.prepare_calls(calls) if self.vectors is not None else None
        with self.transaction() as conn:
            now_ms = self.clock.now_ms()
            for index, (method_name, body) in enumerate(calls):
                conn.execute("SAVEPOINT op")
                try:
                    method = METHODS.get(method_name) or INTERNAL_METHODS.get(method_name)
                    if method is None:
                        raise NotFound(f"unknown method {method_name!r}")
                    handler = method.handler if prepared is None else (
                        self.vectors.handler(method, prepared[index]) or method.handler)
                    result = handler(conn, parse_args(method, body), now_ms)
                except (MiniSphereError, db.DatabaseError) as exc:
                    conn.execute("ROLLBACK TO op")
                    conn.execute("RELEASE op")
                    outcomes.append((False, exc))
                    continue
                conn.execute("RELEASE op")
                outcomes.append((True, result))
        if self.vectors is not None:
            self.vectors.after_commit()  # entries left without a vector get one now
        return outcomes

    # ---- optional vector binding (minisphere/vectors/binding.py) ---------------------------------
    def enable_vectors(self, embedder, *, replace: bool = False, batch_size: int | None = None,
                       progress_callback=None, vector_settings=None) -> dict:
        """Bind an embedding provider and backfill every entry's vector (progress: done, total)."""
        from .vectors.binding import attach
        if self.vectors is None:
            self.vectors = attach(self, None, vector_settings)
        return self.vectors.bind(embedder, replace=replace, batch_size=batch_size,
                                 progress=progress_callback)

    def backfill_vectors(self, batch_size: int | None = None, progress_callback=None) -> dict:
        """Embed, outside any write transaction, every entry that has no vector yet."""
        if self.vectors is None:
            raise InvalidArgument("this workspace has no vector binding")
        return self.vectors.backfill(batch_size, progress_callback)

    def prefetch_vectors(self, method_name: str, body: dict | None) -> bool:
        """Embed what a write will need ahead of time (e.g. before queueing it for the writer
        thread): the write then finds its vector cached. False when unbound or nothing to embed."""
        if self.vectors is None:
            return False
        return self.vectors.prefetch(method_name, body)

    def vector_status(self) -> dict:
        return self.vectors.status() if self.vectors is not None else {"bound": False}

    # ---- Pythonic wrappers (contract names in snake_case) -------------------------------------
    def capture(self, content: str, **options) -> dict:
        return self.call("capture", {"content": content, **options})

    def append(self, id: str, addition: str, **options) -> dict:
        return self.call("append", {"id": id, "addition": addition, **options})

    def update(self, id: str, content: str) -> dict:
        return self.call("update", {"id": id, "content": content})

    def set_status(self, id: str, status: str) -> dict:
        return self.call("setStatus", {"id": id, "status": status})

    def forget(self, id: str) -> dict:
        return self.call("forget", {"id": id})

    def link(self, src: str, dst: str, type: str, **options) -> dict:
        return self.call("link", {"src": src, "dst": dst, "type": type, **options})

    def unlink(self, src: str, dst: str, type: str) -> dict:
        return self.call("unlink", {"src": src, "dst": dst, "type": type})

    def recall(self, query: str, **options) -> dict:
        return self.call("recall", {"query": query, **options})

    def get_entry(self, id: str) -> dict:
        return self.call("getEntry", {"id": id})

    def list_recent(self, **options) -> dict:
        return self.call("listRecent", options)

    def connections(self, id: str) -> dict:
        return self.call("connections", {"id": id})

    def graph_view(self, seed_ids: list[str], **options) -> dict:
        return self.call("graphView", {"seedIds": seed_ids, **options})

    def get_tags(self) -> dict:
        return self.call("getTags")

    def get_count(self) -> dict:
        return self.call("getCount")

    def get_stats(self) -> dict:
        return self.call("getStats")

    def get_brief(self) -> dict:
        return self.call("getBrief")

    def run_staleness_pass(self, **options) -> dict:
        return self.call("runStalenessPass", options)
