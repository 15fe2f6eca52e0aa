"""VectorBinding: what a bound Workspace does around its writes and recall.

Embedding never runs inside a write transaction. For each hooked call, `prepare` embeds the text
the write will store (capture/update: the new content; append: current content + addition) or
the query (recall: the query as given; its time phrases also bound the KNN) BEFORE the transaction opens;
`handler` then returns the in-transaction step, which only does SQLite work (KNN, insert).
A batch (group commit) is prepared with ONE embed call for all its texts.

`prefetch` lets an owner embed ahead of time, off the writer thread (e.g. while a write waits in
the queue): the vectors land in a small cache that `prepare` reads first.

If a vector cannot be written with its entry (no provider attached, the provider failed, or the
content changed between embedding and commit), the entry simply has no vector yet: `backfill`
(run after such a commit, and on demand) embeds every entry lacking one, in batches, outside
the transaction, and writes only vectors whose content is still current.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

from ..errors import InvalidArgument
from . import semantic, store
from .arm import vector_arm

log = logging.getLogger("minisphere.vectors")

BACKFILL_BATCH_SIZE = 64          # entries embedded per backfill step (one short write each)
PREFETCH_CACHE_MAX = 2048         # texts whose vectors are kept for prepare()
FAILURE_BACKOFF_S = 30.0          # after a provider failure, writes skip embedding this long
HOOKED = frozenset({"capture", "update", "append", "recall"})
Progress = Callable[[int, int], None]


def attach(workspace, provider=None, settings: semantic.SemanticSettings | None = None) -> "VectorBinding":
    """The binding of an open workspace; binding a provider to an unbound file backfills it."""
    binding = VectorBinding(workspace, provider, settings)
    if provider is not None:
        # a new binding, or entries captured while no embedder was attached: embed them now
        if binding.binding is None:
            binding.bind(provider)
        else:
            binding.backfill()
    return binding


class VectorBinding:
    hooked = HOOKED

    def __init__(self, workspace, provider=None, settings: semantic.SemanticSettings | None = None):
        self.ws = workspace
        self.provider = provider
        self.settings = settings or semantic.SemanticSettings()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()   # prefetch may run beside the writer thread
        self._needs_backfill = False
        self.last_error: str | None = None
        self._failed_at = float("-inf")       # monotonic time of the last provider failure
        with workspace._lock:
            store.ensure_extension(workspace.conn)
            self.binding = store.read_binding(workspace.conn)
        if provider is not None and self.binding is not None:
            if (self.binding["provider"], self.binding["dim"]) != (provider.name, provider.dim):
                raise InvalidArgument(
                    f"workspace is bound to {self.binding['provider']} ({self.binding['dim']} dims), "
                    f"not {provider.name} ({provider.dim}); rebind with enable_vectors(provider, replace=True)")

    # ---- binding lifecycle ---------------------------------------------------------------------
    def bind(self, provider, *, replace: bool = False, batch_size: int | None = None,
             progress: Progress | None = None) -> dict:
        """Record the binding, create the vec table, then backfill every entry (with progress)."""
        with self.ws.transaction() as conn:
            current = store.read_binding(conn)
            if current is not None and replace:
                store.drop(conn)
                current = None
            if current is None:
                self.binding = store.create(conn, provider.name, provider.dim, self.ws.clock.now_ms())
            elif (current["provider"], current["dim"]) != (provider.name, provider.dim):
                raise InvalidArgument(f"workspace is bound to {current['provider']}; pass replace=True")
        self.provider = provider
        self._cache.clear()
        return self.backfill(batch_size, progress)

    def status(self) -> dict:
        with self.ws._lock:
            return {"bound": True, "provider": self.binding["provider"], "dim": self.binding["dim"],
                    "attached": self.provider is not None, "vectors": store.count(self.ws.conn),
                    "missing": store.missing_count(self.ws.conn), "lastError": self.last_error}

    # ---- embedding -------------------------------------------------------------------------------
    def embed(self, texts: list[str]) -> list[np.ndarray | None]:
        """Vectors for texts (cache first, one provider call for the rest); None on failure."""
        if self.provider is None or not texts:
            return [None] * len(texts)
        if time.monotonic() - self._failed_at < FAILURE_BACKOFF_S:  # a down service must not
            with self._cache_lock:                                    # hold every write
                return [self._cache.get(t) for t in texts]
        with self._cache_lock:
            todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            try:
                matrix = np.asarray(self.provider.embed(todo), dtype=np.float32)
                if matrix.shape != (len(todo), self.binding["dim"]):
                    raise ValueError(f"provider returned shape {matrix.shape}")
            except Exception as exc:  # noqa: BLE001 - a write must not fail because of the model
                self.last_error = f"{type(exc).__name__}: {exc}"
                self._failed_at = time.monotonic()
                log.warning("embedding failed, entries stay pending: %s", self.last_error)
                with self._cache_lock:
                    return [self._cache.get(t) for t in texts]
            with self._cache_lock:
                for text, vector in zip(todo, matrix):
                    self._cache[text] = vector
                while len(self._cache) > PREFETCH_CACHE_MAX:
                    self._cache.popitem(last=False)
        with self._cache_lock:
            return [self._cache.get(t) for t in texts]

    def text_for(self, method_name: str, args) -> str | None:
        """The text whose vector a hooked call needs (read outside any write transaction)."""
        if method_name in ("capture", "update"):
            return args.content
        if method_name == "recall":  # the whole query: "in 1990" is a filter AND a topic
            return args.query
        if method_name == "append":
            with self.ws._lock:
                row = self.ws.conn.execute("SELECT content FROM entries WHERE id = ?",
                                           (args.id,)).fetchone()
            return f"{row[0].rstrip()}\n{args.addition.strip()}" if row else None
        return None

    def prepare(self, items: list[tuple[str, Any]]) -> list[tuple[str | None, np.ndarray | None]]:
        """(text, vector) per (method name, parsed args); (None, None) for calls not hooked."""
        texts = [self.text_for(name, args) if name in HOOKED and args is not None else None
                 for name, args in items]
        wanted = [t for t in texts if t is not None]
        vectors = dict(zip(wanted, self.embed(wanted)))
        return [(t, vectors.get(t) if t is not None else None) for t in texts]

    def prefetch(self, method_name: str, body: dict | None) -> bool:
        """Embed ahead of a write (off the writer thread); True if a vector is now cached."""
        args = self._parse(method_name, body)
        text = self.text_for(method_name, args) if args is not None and method_name in HOOKED else None
        return text is not None and self.embed([text])[0] is not None

    @staticmethod
    def _parse(method_name: str, body: dict | None):
        from ..surface import METHODS
        from ..workspace import parse_args
        method = METHODS.get(method_name)
        if method is None:
            return None
        try:
            return parse_args(method, body)
        except Exception:  # noqa: BLE001 - the call itself will report it
            return None

    def prepare_calls(self, calls: list[tuple[str, dict]]) -> list:
        """prepare() for a group-commit batch of raw (method name, body) calls."""
        return self.prepare([(name, self._parse(name, body) if name in HOOKED else None)
                             for name, body in calls])

    # ---- one call (Workspace.call) -------------------------------------------------------------
    def call(self, method, args):
        prepared = self.prepare([(method.name, args)])[0]   # no lock, no transaction
        handler = self.handler(method, prepared) or method.handler
        ws = self.ws
        if method.access == "read":
            with ws._lock:
                result = handler(ws.conn, args, ws.clock.now_ms())
            follow_up = getattr(method, "follow_up", None)
            if follow_up is not None:
                ws.run_batch([follow_up(result)])
            return result
        with ws.transaction() as conn:
            result = handler(conn, args, ws.clock.now_ms())
        self.after_commit()
        return result

    # ---- in-transaction steps -----------------------------------------------------------------------
    def handler(self, method, prepared: tuple[str | None, np.ndarray | None]):
        """The in-transaction handler replacing `method.handler` (None: use the plain one)."""
        text, vector = prepared
        name = method.name
        if name == "recall":
            from ..retrieval.recall import recall

            def run_recall(conn, args, now_ms):
                arm = (lambda c, prefilter: vector_arm(c, vector, prefilter)) if vector is not None else None
                result = recall(conn, args, now_ms, vector_arm=arm)
                result["queryUsed"]["vector"] = self._arm_state(vector)
                return result
            return run_recall
        if name == "capture":
            def run_capture(conn, args, now_ms):
                if vector is None:
                    self._needs_backfill = self.provider is not None
                    return method.handler(conn, args, now_ms)
                return semantic.capture(conn, args, now_ms, vector, self.settings, self.provider.name)
            return run_capture
        if name in ("update", "append"):
            def run_change(conn, args, now_ms):
                result = method.handler(conn, args, now_ms)
                self._put_if_current(conn, args.id, text, vector)
                return result
            return run_change
        return None

    def read_handler(self, method):
        """A handler(conn, args, now_ms) for a read (recall) on ANY connection, e.g. a read-only
        pool connection: embeds the query (cache first), loads sqlite-vec there if needed, runs."""
        def run(conn, args, now_ms):
            prepared = self.prepare([(method.name, args)])[0]
            store.ensure_extension(conn)
            return (self.handler(method, prepared) or method.handler)(conn, args, now_ms)
        return run

    def _arm_state(self, vector) -> dict:
        if vector is not None:
            return {"arm": "on", "provider": self.binding["provider"]}
        reason = "no embedder attached" if self.provider is None else f"embedding failed: {self.last_error}"
        return {"arm": "off", "provider": self.binding["provider"], "reason": reason}

    def _put_if_current(self, conn, entry_id: str, text: str | None, vector) -> None:
        row = conn.execute("SELECT seq, content FROM entries WHERE id = ?", (entry_id,)).fetchone()
        if row is None:
            return
        if vector is not None and text is not None and row[1] == text:
            store.put(conn, row[0], vector)
        elif not conn.execute(f"SELECT 1 FROM {store.VEC_TABLE} WHERE rowid = ?", (row[0],)).fetchone():
            self._needs_backfill = self.provider is not None

    def after_commit(self) -> None:
        if self._needs_backfill and time.monotonic() - self._failed_at >= FAILURE_BACKOFF_S:
            self._needs_backfill = False
            self.backfill()

    # ---- backfill ----------------------------------------------------------------------------------
    def backfill(self, batch_size: int | None = None, progress: Progress | None = None) -> dict:
        """Embed every entry lacking a vector: read a batch, embed it with no lock held, write
        the vectors whose content is unchanged in one short transaction. Returns a summary."""
        if self.provider is None:
            raise InvalidArgument("no embedding provider attached to this workspace")
        started = time.perf_counter()
        with self.ws._lock:
            total = store.missing_count(self.ws.conn)
        done, skipped, after = 0, 0, 0
        if progress:
            progress(0, total)
        while True:
            with self.ws._lock:
                batch = store.missing(self.ws.conn, max(1, batch_size or BACKFILL_BATCH_SIZE), after)
            if not batch:
                break
            after = batch[-1][0]
            texts = [content for _, content, _ in batch]
            try:
                matrix = np.asarray(self.provider.embed(texts), dtype=np.float32)
            except Exception as exc:  # noqa: BLE001
                self.last_error = f"{type(exc).__name__}: {exc}"
                self._failed_at = time.monotonic()
                log.warning("backfill stopped: %s", self.last_error)
                break
            with self.ws.transaction() as conn:
                for (seq, content, _), vector in zip(batch, matrix):
                    row = conn.execute("SELECT content FROM entries WHERE seq = ?", (seq,)).fetchone()
                    if row is None or row[0] != content:
                        skipped += 1
                        continue
                    store.put(conn, seq, vector)
                    done += 1
            if progress:
                progress(done, total)
        return {"embedded": done, "skipped": skipped, "total": total,
                "seconds": round(time.perf_counter() - started, 3)}
