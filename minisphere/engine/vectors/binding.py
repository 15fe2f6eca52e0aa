"""VectorBinding: the workspace hooks (`engine/hooks.py`) of a file with a vector binding.

Embedding never runs inside a write transaction. `prepare` embeds, before the transaction
opens, the text each hooked call needs — capture/update: the new content; append: the current
content plus the addition; recall: the query as given (its time phrases also bound the KNN) —
with ONE provider call for a whole group-commit batch. `handler` then returns the
in-transaction step, which only does SQLite work (KNN, insert).

If a vector cannot be written with its entry (no provider attached, the provider failed, or
the content changed between embedding and commit), the entry simply has no vector yet:
`backfill` (run after such a commit, and on demand) embeds every entry lacking one, in
batches, outside the transaction, and writes only vectors whose content is still current.

The binding reaches the file only through the workspace's `reading()` and `transaction()`
(duck-typed as `storage`), so it never takes the workspace's lock itself.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from minisphere.engine import db
from minisphere.engine.hooks import WorkspaceHooks
from minisphere.engine.vectors import semantic, table
from minisphere.engine.vectors.arm import VectorArm
from minisphere.errors import InvalidArgument

log = logging.getLogger("minisphere.vectors")

BACKFILL_BATCH_SIZE = 64          # entries embedded per backfill step (one short write each)
EMBED_CACHE_MAX = 2048            # texts whose vectors are kept (a retried write re-uses them)
FAILURE_BACKOFF_S = 30.0          # after a provider failure, writes skip embedding this long
HOOKED = frozenset({"capture", "update", "append", "recall"})
Progress = Callable[[int, int], None]


def attach(storage, provider=None, settings: semantic.SemanticSettings | None = None
           ) -> VectorBinding:
    """The binding of an open workspace; binding a provider to an unbound file backfills it."""
    binding = VectorBinding(storage, provider, settings)
    if provider is not None:
        # a new binding, or entries captured while no embedder was attached: embed them now
        if binding.binding is None:
            binding.bind(provider)
        else:
            binding.backfill()
    return binding


class VectorBinding(WorkspaceHooks):
    hooked = HOOKED

    def __init__(self, storage, provider=None, settings: semantic.SemanticSettings | None = None):
        self.storage = storage
        self.provider = provider
        self.settings = settings or semantic.SemanticSettings()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()   # prepare runs on several threads at once
        self._needs_backfill = False
        self.last_error: str | None = None
        self._failed_at = float("-inf")       # monotonic time of the last provider failure
        with storage.reading() as conn:
            table.ensure_extension(conn)
            self.binding = db.read_vector_binding(conn)
        if provider is not None and self.binding is not None:
            if (self.binding["provider"], self.binding["dim"]) != (provider.name, provider.dim):
                raise InvalidArgument(
                    f"workspace is bound to {self.binding['provider']} ({self.binding['dim']} dims), "
                    f"not {provider.name} ({provider.dim}); rebind with enable_vectors(provider, replace=True)")

    # ---- binding lifecycle ---------------------------------------------------------------------
    def bind(self, provider, *, replace: bool = False, batch_size: int | None = None,
             progress: Progress | None = None) -> dict:
        """Record the binding, create the vec table, then backfill every entry (with progress)."""
        with self.storage.transaction() as conn:
            current = db.read_vector_binding(conn)
            if current is not None and replace:
                table.drop(conn)
                current = None
            if current is None:
                self.binding = table.create(conn, provider.name, provider.dim,
                                            self.storage.clock.now_ms())
            elif (current["provider"], current["dim"]) != (provider.name, provider.dim):
                raise InvalidArgument(f"workspace is bound to {current['provider']}; pass replace=True")
        self.provider = provider
        self._cache.clear()
        return self.backfill(batch_size, progress)

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
                while len(self._cache) > EMBED_CACHE_MAX:
                    self._cache.popitem(last=False)
        with self._cache_lock:
            return [self._cache.get(t) for t in texts]

    @staticmethod
    def text_for(method_name: str, args, conn) -> str | None:
        """The text whose vector a hooked call needs (`conn` is only read)."""
        if method_name in ("capture", "update"):
            return args.content
        if method_name == "recall":  # the whole query: "in 1990" is a filter AND a topic
            return args.query
        if method_name == "append":
            row = conn.execute("SELECT content FROM entries WHERE id = ?", (args.id,)).fetchone()
            return f"{row[0].rstrip()}\n{args.addition.strip()}" if row else None
        return None

    # ---- hooks -------------------------------------------------------------------------------------
    def prepare(self, calls: list[tuple[str, Any]], conn) -> list[tuple[str | None, Any]]:
        """(text, vector) per (method name, parsed args), all texts embedded in one call."""
        texts = [self.text_for(name, args, conn) if name in HOOKED else None
                 for name, args in calls]
        wanted = [t for t in texts if t is not None]
        vectors = dict(zip(wanted, self.embed(wanted)))
        return [(t, vectors.get(t) if t is not None else None) for t in texts]

    def prepare_connection(self, conn) -> None:
        table.ensure_extension(conn)

    def handler(self, method, prepared):
        text, vector = prepared if prepared is not None else (None, None)
        name = method.name
        if name == "recall":
            from minisphere.engine.retrieval.recall import recall

            def run_recall(conn, args, now_ms):
                arm = VectorArm(vector) if vector is not None else None
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

    def after_commit(self) -> None:
        if self._needs_backfill and time.monotonic() - self._failed_at >= FAILURE_BACKOFF_S:
            self._needs_backfill = False
            self.backfill()

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
            table.put(conn, row[0], vector)
        elif not conn.execute(f"SELECT 1 FROM {table.VEC_TABLE} WHERE rowid = ?", (row[0],)).fetchone():
            self._needs_backfill = self.provider is not None

    # ---- backfill ----------------------------------------------------------------------------------
    def backfill(self, batch_size: int | None = None, progress: Progress | None = None) -> dict:
        """Embed every entry lacking a vector: read a batch, embed it with no lock held, write
        the vectors whose content is unchanged in one short transaction. Returns a summary."""
        if self.provider is None:
            raise InvalidArgument("no embedding provider attached to this workspace")
        started = time.perf_counter()
        with self.storage.reading() as conn:
            total = table.missing_count(conn)
        done, skipped, after = 0, 0, 0
        if progress:
            progress(0, total)
        while True:
            with self.storage.reading() as conn:
                batch = table.missing(conn, max(1, batch_size or BACKFILL_BATCH_SIZE), after)
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
            with self.storage.transaction() as conn:
                for (seq, content, _), vector in zip(batch, matrix):
                    row = conn.execute("SELECT content FROM entries WHERE seq = ?", (seq,)).fetchone()
                    if row is None or row[0] != content:
                        skipped += 1
                        continue
                    table.put(conn, seq, vector)
                    done += 1
            if progress:
                progress(done, total)
        return {"embedded": done, "skipped": skipped, "total": total,
                "seconds": round(time.perf_counter() - started, 3)}
