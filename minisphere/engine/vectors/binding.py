"""VectorBinding: the workspace hooks (`engine/hooks.py`) of a file with a vector binding.

Embedding never runs inside a write transaction. `prepare` embeds, before the transaction
opens, the text each hooked write needs — capture/update: the new content; append: the current
content plus the addition — with ONE provider call for a whole group-commit batch. `handler`
then returns the in-transaction step, which only does SQLite work (KNN, insert).

A recall's query (as given: its time phrases also bound the KNN) is only *started* in
`prepare`: the provider's `submit` when it has one (the shared embedder actor: the forward pass
runs in that process; the call is sent from a thread of its own), else a thread here. A host
may run that `prepare` as soon as the call arrives (`started_on_arrival`). The recall runs its
lexical stages meanwhile and waits for the vector where the vector arm needs it; waiting for
the query vector first would add the whole embedding to every bound recall, where this adds
only what outlasts the lexical stages. The wait shows in the answer's timings as
`embedWaitMs`, and the embedding's own latency (started to vector in hand) as `queryEmbedMs`.

Rebinding to another provider (`bind(..., replace=True)`) drops every stored vector and
re-embeds them all. Each bind starts a new generation: a vector embedded under an earlier one
(a write prepared before the rebind, a backfill still running) is never stored after it, so
the file never holds vectors of two models.

If a vector cannot be written with its entry (no provider attached, the provider failed, the
content changed between embedding and commit, or a rebind came between), the entry simply has
no vector yet: `backfill` (run after such a commit, and on demand) embeds every entry lacking
one, in batches, outside the transaction, and writes only vectors whose content is still current.

Recall's KNN runs over the resident copy of the vectors (`index.py`: one in-memory matrix, rebuilt
when the binding opens and on every bind, kept equal to `entries_vec` after every write
transaction); the capture checks (semantic.py) still search sqlite-vec, inside their
transaction, where the batch's earlier captures are already visible.

The binding reaches the file only through the workspace's `reading()` and `transaction()`
(duck-typed as `storage`), so it never takes the workspace's lock itself.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

import numpy as np

from minisphere.engine import db
from minisphere.engine.arguments import CaptureArgs, RecallArgs
from minisphere.engine.clock import Clock
from minisphere.engine.embedding.base import EmbeddingProvider
from minisphere.engine.hooks import Handler, WorkspaceHooks
from minisphere.engine.vectors import index as resident
from minisphere.engine.vectors import semantic, table
from minisphere.engine.vectors.arm import DeferredVectorArm
from minisphere.errors import InvalidArgument
from minisphere.wire.recall_answer import RecallAnswer, VectorArmState

if TYPE_CHECKING:  # pragma: no cover - types only
    from minisphere.engine.methods import Method

log = logging.getLogger("minisphere.vectors")

BACKFILL_BATCH_SIZE = 64          # entries embedded per backfill step (one short write each)
EMBED_CACHE_MAX = 2048            # texts whose vectors are kept (a retried write re-uses them)
FAILURE_BACKOFF_S = 30.0          # after a provider failure, writes skip embedding this long
HOOKED = frozenset({"capture", "update", "append", "recall"})
QUERY_THREADS = 2                 # threads embedding recall queries for providers in this process
Progress = Callable[[int, int], None]
Embedding = Future[np.ndarray]         # a provider's (texts, dim) matrix, on its way


class Storage(Protocol):
    """What the binding uses of its workspace: the writer connection, to read or to write."""

    @property
    def clock(self) -> Clock: ...

    def reading(self) -> AbstractContextManager[db.Connection]: ...

    def transaction(self) -> AbstractContextManager[db.Connection]: ...


class BackfillSummary(TypedDict):
    embedded: int
    skipped: int          # entries whose content changed while they were embedded
    total: int
    seconds: float


class BindingState(TypedDict):
    provider: str | None
    dim: int | None
    missing: int          # entries without a vector


_pools: dict[str, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def _threads(name: str, count: int) -> ThreadPoolExecutor:
    """A process-wide pool, made on first use (a process that never needs it starts none)."""
    with _pools_lock:
        if name not in _pools:
            _pools[name] = ThreadPoolExecutor(count, thread_name_prefix=name)
        return _pools[name]


def _query_threads() -> ThreadPoolExecutor:
    """Where a provider without `submit` embeds a recall's query beside the recall."""
    return _threads("query-embed", QUERY_THREADS)


def _sent(send: Callable[[list[str]], Embedding], texts: list[str]) -> Embedding:
    """`send(texts)` run on a thread of its own, its Future's outcome passed on: sending a call
    to a remote embedder (serializing it, handing it to the runtime) then costs neither the
    recall's thread nor an event loop that starts it on arrival."""
    out: Embedding = Future()

    def relay(inner: Embedding) -> None:
        try:
            out.set_result(inner.result())
        except BaseException as exc:  # noqa: BLE001 - the waiter gets the embedder's error
            out.set_exception(exc)

    def sent(outer: Future[Embedding]) -> None:
        try:
            outer.result().add_done_callback(relay)
        except BaseException as exc:  # noqa: BLE001 - the call could not even be sent
            out.set_exception(exc)
    _threads("query-send", 1).submit(send, texts).add_done_callback(sent)
    return out


class QueryVector:
    """A recall's query vector: already known (cached, or none to be had), or being embedded
    since `started`. `wait()` gives the vector, or None when it cannot be had; a failure is
    recorded on the binding as a failed write embedding is (its reason, and the back-off)."""

    def __init__(self, binding: VectorBinding, text: str | None,
                 vector: np.ndarray | None = None, future: Embedding | None = None,
                 started: float | None = None) -> None:
        self.binding, self.text = binding, text
        self.generation = binding.generation
        self.vector = vector
        self._future = future
        self.started = time.perf_counter() if started is None else started
        self.embed_ms: float | None = None     # started -> vector in hand, when one was embedded
        self._done_at: float | None = None
        if future is not None:
            future.add_done_callback(self._finished)

    @property
    def may_come(self) -> bool:
        """Whether there is or may be a vector (not: no provider, or backing off uncached)."""
        return self.vector is not None or self._future is not None

    def _finished(self, _future: Embedding) -> None:
        self._done_at = time.perf_counter()

    def wait(self) -> np.ndarray | None:
        future, self._future = self._future, None
        if future is None:
            return self.vector
        binding = self.binding
        try:
            matrix = np.asarray(future.result(timeout=getattr(binding.provider, "timeout_s", None)),
                                dtype=np.float32)
            if matrix.shape != (1, binding._recorded()["dim"]):
                raise ValueError(f"provider returned shape {matrix.shape}")
        except Exception as exc:  # noqa: BLE001 - a recall goes on without the vector arm
            binding._failed(exc, "recall goes on without the vector arm")
            return None
        finally:
            done_at = self._done_at if self._done_at is not None else time.perf_counter()
            self.embed_ms = round((done_at - self.started) * 1000, 3)
        self.vector = matrix[0]
        assert self.text is not None        # only a text is ever embedded (`start_query`)
        binding._remember([self.text], matrix, self.generation)
        return self.vector


def attach(storage: Storage, provider: EmbeddingProvider | None = None,
           settings: semantic.SemanticSettings | None = None,
           reembed_other: bool = False) -> VectorBinding:
    """The binding of an open workspace; binding a provider to an unbound file backfills it.
    A file holding another provider's vectors is refused (InvalidArgument), or with
    `reembed_other` re-embedded with this one: the service's blueprint names the provider a
    workspace is to have, and a rebind cut short (or never begun) left the file on another."""
    binding = VectorBinding(storage, provider, settings, refuse_other=not reembed_other)
    if provider is not None:
        current = binding.binding
        if current is not None and not binding.holds(provider):
            log.warning("%s holds vectors of %s (%d dims); re-embedding with %s",
                        getattr(storage, "path", "workspace"), current["provider"],
                        current["dim"], provider.name)
            binding.bind(provider, replace=True)
        elif current is None:
            binding.bind(provider)
        else:       # entries captured while no embedder was attached: embed them now
            binding.backfill()
    return binding


class VectorBinding(WorkspaceHooks):
    hooked = HOOKED
    started_on_arrival = frozenset({"recall"})     # `prepare` only sends the query (start_query)

    def __init__(self, storage: Storage, provider: EmbeddingProvider | None = None,
                 settings: semantic.SemanticSettings | None = None,
                 refuse_other: bool = True) -> None:
        self.storage = storage
        self.provider: EmbeddingProvider | None = provider
        self.settings = settings or semantic.SemanticSettings()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()   # prepare runs on several threads at once
        self._needs_backfill = False
        self.last_error: str | None = None
        self._failed_at = float("-inf")       # monotonic time of the last provider failure
        self.generation = 0                   # bumped by every bind (see the module's note)
        self.index: resident.VectorIndex | None = None
        with storage.reading() as conn:
            table.ensure_extension(conn)
            self.binding = db.read_vector_binding(conn)
            if self.binding is not None:
                self._open_index(conn)
            resident.watch(conn, self._touched)
        if provider is not None and self.binding is not None and not self.holds(provider):
            if refuse_other:
                raise InvalidArgument(
                    f"workspace is bound to {self.binding['provider']} ({self.binding['dim']} "
                    f"dims), not {provider.name} ({provider.dim}); rebind with "
                    f"enable_vectors(provider, replace=True)")
            self.provider = None        # its vectors are another provider's: `attach` re-embeds

    # ---- binding lifecycle ---------------------------------------------------------------------
    def holds(self, provider: EmbeddingProvider) -> bool:
        """The file's vectors are this provider's."""
        return self.binding is not None and (
            (self.binding["provider"], self.binding["dim"]) == (provider.name, provider.dim))

    def bind(self, provider: EmbeddingProvider, *, replace: bool = False,
             batch_size: int | None = None, progress: Progress | None = None
             ) -> BackfillSummary:
        """Record the binding, create the vec table, then backfill every entry (with progress)."""
        self.switch(provider, replace=replace)
        return self.backfill(batch_size, progress)

    def switch(self, provider: EmbeddingProvider, *, replace: bool = False) -> None:
        """Record the binding and create its vec table (dropping another provider's with
        `replace`); new writes are embedded with `provider` from the commit on. The entries
        already there are left to `backfill`."""
        with self.storage.transaction() as conn:
            current = db.read_vector_binding(conn)
            if current is not None and replace:
                table.drop(conn)
                current = None
            if current is None:
                self.binding = table.create(conn, provider.name, provider.dim,
                                            self.storage.clock.now_ms())
                self._open_index(conn)
            elif (current["provider"], current["dim"]) != (provider.name, provider.dim):
                raise InvalidArgument(f"workspace is bound to {current['provider']}; pass replace=True")
            # inside the transaction: no write commits between the new table and the new provider
            with self._cache_lock:
                self.generation += 1
                self.provider = provider
                self._cache.clear()

    def state(self) -> BindingState:
        """The file's binding, and how many entries still lack a vector."""
        with self.storage.reading() as conn:
            missing = table.missing_count(conn)
        bound = self.binding or {}
        return {"provider": bound.get("provider"), "dim": bound.get("dim"), "missing": missing}

    def _recorded(self) -> dict[str, Any]:
        """The binding the file records: there is one wherever a provider is attached, an index
        open or a vector embedded (`switch` records it first)."""
        assert self.binding is not None, "the file records no vector binding"
        return self.binding

    # ---- the resident index (index.py) ---------------------------------------------------------
    def _open_index(self, conn: db.Connection) -> None:
        index = resident.VectorIndex(self._recorded()["dim"])
        index.rebuild(conn)
        self.index = index

    def _touched(self, seq: int) -> None:
        index = self.index
        if index is not None:
            index.touch(seq)

    def transaction_ended(self, conn: db.Connection) -> None:
        index = self.index
        if index is None:
            return
        try:
            index.sync(conn)
        except Exception:  # the write stands; recall falls back to sqlite-vec
            log.exception("resident vector index out of step with the file: dropped, recall "
                          "searches sqlite-vec until the workspace reopens")
            self.index = None

    # ---- embedding -------------------------------------------------------------------------------
    def embed(self, texts: list[str]) -> list[np.ndarray | None]:
        """Vectors for texts (cache first, one provider call for the rest); None on failure."""
        provider, generation = self.provider, self.generation
        if provider is None or not texts:
            return [None] * len(texts)
        if time.monotonic() - self._failed_at < FAILURE_BACKOFF_S:  # a down service must not
            with self._cache_lock:                                    # hold every write
                return [self._cache.get(t) for t in texts]
        with self._cache_lock:
            todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            try:
                matrix = np.asarray(provider.embed(todo), dtype=np.float32)
                if matrix.shape != (len(todo), self._recorded()["dim"]):
                    raise ValueError(f"provider returned shape {matrix.shape}")
            except Exception as exc:  # noqa: BLE001 - a write must not fail because of the model
                self._failed(exc, "entries stay pending")
                with self._cache_lock:
                    return [self._cache.get(t) for t in texts]
            self._remember(todo, matrix, generation)
        with self._cache_lock:
            return [self._cache.get(t) for t in texts]

    def start_query(self, text: str) -> QueryVector:
        """A recall's query vector, started now and waited for only where the recall needs it."""
        with self._cache_lock:
            cached = self._cache.get(text)
        if (self.provider is None or cached is not None
                or time.monotonic() - self._failed_at < FAILURE_BACKOFF_S):
            return QueryVector(self, text, cached)
        submit = getattr(self.provider, "submit", None)
        started = time.perf_counter()        # sending the call is part of the embedding's cost
        future = (_sent(submit, [text]) if submit is not None
                  else _query_threads().submit(self.provider.embed, [text]))
        return QueryVector(self, text, future=future, started=started)

    def _failed(self, exc: BaseException, consequence: str) -> None:
        self.last_error = f"{type(exc).__name__}: {exc}"
        self._failed_at = time.monotonic()
        log.warning("embedding failed, %s: %s", consequence, self.last_error)

    def _remember(self, texts: list[str], matrix: np.ndarray, generation: int) -> None:
        with self._cache_lock:
            if generation != self.generation:      # embedded by the provider a rebind replaced
                return
            for text, vector in zip(texts, matrix):
                self._cache[text] = vector
            while len(self._cache) > EMBED_CACHE_MAX:
                self._cache.popitem(last=False)

    @staticmethod
    def text_for(method_name: str, args: Any, conn: db.Connection | None) -> str | None:
        """The text whose vector a hooked call needs (`conn` is only read; None only for the
        calls `started_on_arrival`)."""
        text: str
        if method_name in ("capture", "update"):
            text = args.content
            return text
        if method_name == "recall":  # the whole query: "in 1990" is a filter AND a topic
            text = args.query
            return text
        if method_name == "append":
            assert conn is not None
            row = conn.execute("SELECT content FROM entries WHERE id = ?", (args.id,)).fetchone()
            return f"{row[0].rstrip()}\n{args.addition.strip()}" if row else None
        return None

    # ---- hooks -------------------------------------------------------------------------------------
    def prepare(self, calls: list[tuple[str, Any]], conn: db.Connection | None
                ) -> list[tuple[str | None, Any, int]]:
        """(text, vector, generation) per (method name, parsed args), all the writes' texts
        embedded in one call; a recall's vector is a QueryVector, started here and waited for
        by the recall."""
        generation = self.generation
        texts = [self.text_for(name, args, conn) if name in HOOKED else None
                 for name, args in calls]
        wanted = [t for (name, _), t in zip(calls, texts) if t is not None and name != "recall"]
        vectors = dict(zip(wanted, self.embed(wanted)))
        return [(t, self.start_query(t) if name == "recall" and t is not None
                 else vectors.get(t) if t is not None else None, generation)
                for (name, _), t in zip(calls, texts)]

    def prepare_connection(self, conn: db.Connection) -> None:
        table.ensure_extension(conn)

    def handler(self, method: Method, prepared: Any) -> Handler | None:
        text, vector, generation = prepared if prepared is not None else (None, None, self.generation)
        name = method.name
        if name == "recall":
            from minisphere.engine.retrieval.recall import recall

            query = vector if isinstance(vector, QueryVector) else QueryVector(self, text, vector)

            def run_recall(conn: db.Connection, args: RecallArgs, now_ms: int) -> RecallAnswer:
                nonlocal query
                if query.generation != self.generation:    # the other model's query vector
                    query = QueryVector(self, text)
                arm = DeferredVectorArm(query.wait, self.index) if query.may_come else None
                result = recall(conn, args, now_ms, vector_arm=arm)
                # a recall that never reached the vector arm (no search terms) still says
                # whether the arm would have been on
                result["queryUsed"]["vector"] = self._arm_state(query.wait())
                if query.embed_ms is not None:
                    result["timings"]["queryEmbedMs"] = query.embed_ms
                return result
            return run_recall
        if name == "capture":
            def run_capture(conn: db.Connection, args: CaptureArgs, now_ms: int) -> Any:
                if vector is None or generation != self.generation:
                    self._needs_backfill = self.provider is not None
                    return method.handler(conn, args, now_ms)
                assert self.provider is not None    # a current vector is the current provider's
                return semantic.capture(conn, args, now_ms, vector, self.settings, self.provider.name)
            return run_capture
        if name in ("update", "append"):
            def run_change(conn: db.Connection, args: Any, now_ms: int) -> Any:
                result = method.handler(conn, args, now_ms)
                self._put_if_current(conn, args.id, text,
                                     vector if generation == self.generation else None)
                return result
            return run_change
        return None

    def after_commit(self) -> None:
        if self._needs_backfill and time.monotonic() - self._failed_at >= FAILURE_BACKOFF_S:
            self._needs_backfill = False
            self.backfill()

    def _arm_state(self, vector: np.ndarray | None) -> VectorArmState:
        if vector is not None:
            return {"arm": "on", "provider": self._recorded()["provider"]}
        reason = "no embedder attached" if self.provider is None else f"embedding failed: {self.last_error}"
        return {"arm": "off", "provider": self._recorded()["provider"], "reason": reason}

    def _put_if_current(self, conn: db.Connection, entry_id: str, text: str | None,
                        vector: np.ndarray | None) -> None:
        row = conn.execute("SELECT seq, content FROM entries WHERE id = ?", (entry_id,)).fetchone()
        if row is None:
            return
        if vector is not None and text is not None and row[1] == text:
            table.put(conn, row[0], vector)
            self._touched(row[0])     # an unchanged content fires no trigger
        elif not conn.execute(f"SELECT 1 FROM {table.VEC_TABLE} WHERE rowid = ?", (row[0],)).fetchone():
            self._needs_backfill = self.provider is not None

    # ---- backfill ----------------------------------------------------------------------------------
    def backfill(self, batch_size: int | None = None, progress: Progress | None = None
                 ) -> BackfillSummary:
        """Embed every entry lacking a vector: read a batch, embed it with no lock held, write
        the vectors whose content is unchanged in one short transaction. Returns a summary."""
        provider, generation = self.provider, self.generation
        if provider is None:
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
                matrix = np.asarray(provider.embed(texts), dtype=np.float32)
            except Exception as exc:  # noqa: BLE001
                self.last_error = f"{type(exc).__name__}: {exc}"
                self._failed_at = time.monotonic()
                log.warning("backfill stopped: %s", self.last_error)
                break
            with self.storage.transaction() as conn:
                if generation != self.generation:    # rebound meanwhile: that bind backfills
                    break
                for (seq, content, _), vector in zip(batch, matrix):
                    row = conn.execute("SELECT content FROM entries WHERE seq = ?", (seq,)).fetchone()
                    if row is None or row[0] != content:
                        skipped += 1
                        continue
                    table.put(conn, seq, vector)
                    self._touched(seq)
                    done += 1
            with self.storage.reading() as conn:   # a binding attaching at open has no
                self.transaction_ended(conn)        # workspace hooks to do this yet
            total = max(total, done)      # entries written meanwhile are embedded here too
            if progress:
                progress(done, total)
        if progress and done < total and generation == self.generation:
            with self.storage.reading() as conn:
                if table.missing_count(conn) == 0:
                    # a write's after-commit backfill embedded the rest first: complete
                    progress(total, total)
        return {"embedded": done, "skipped": skipped, "total": total,
                "seconds": round(time.perf_counter() - started, 3)}
