"""The binding's provider as the hooks use it: a cache of the vectors of recent texts (a
retried write, a repeated query), a back-off after a failure (a provider that is down must not
hold up every write), and a recall's query vector started ahead of the recall
(`QueryVector`). Each switch of provider starts a new generation: a vector embedded by the
provider a rebind replaced is never cached or used after it. A deleted entry's texts (its
content, every revision's) leave the cache as the delete runs: a forgotten entry's words are
kept nowhere in the process."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from minisphere.engine.db import Connection
from minisphere.engine.embedding.base import EmbeddingProvider, check_shape

log = logging.getLogger("minisphere.vectors")

EMBED_CACHE_MAX = 2048  # texts whose vectors are kept (a retried write re-uses them)
FAILURE_BACKOFF_S = 30.0  # after a provider failure, writes skip embedding this long
QUERY_THREADS = 2  # threads embedding recall queries for providers in this process
Embedding = Future[np.ndarray]  # a provider's (texts, dim) matrix, on its way
DELETED_TEXT_FUNCTION = "minisphere_text_deleted"
_DELETED_TEXT_TRIGGERS = {  # TEMP: on the writer's connection only; a forget cascades to both
    "entry": "AFTER DELETE ON main.entries BEGIN SELECT {fn}(old.content); END",
    "revision": "AFTER DELETE ON main.revisions BEGIN SELECT {fn}(old.content); END",
}


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
    recorded as a failed write embedding is (its reason, and the back-off)."""

    def __init__(
        self,
        embeddings: Embeddings,
        text: str | None,
        vector: np.ndarray | None = None,
    ) -> None:
        self.embeddings, self.text = embeddings, text
        self.generation, self.provider = embeddings.generation, embeddings.provider
        self.vector = vector
        self._future: Embedding | None = None
        self.started = time.perf_counter()
        self.embed_ms: float | None = None  # started -> vector in hand, when one was embedded
        self._done_at: float | None = None

    def follow(self, future: Embedding) -> None:
        """The embedding sent for this query, to be waited for."""
        self._future = future
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
        embeddings, provider = self.embeddings, self.provider
        try:
            matrix = np.asarray(
                future.result(timeout=getattr(provider, "timeout_s", None)), dtype=np.float32
            )
            if embeddings.replaced_since(self.generation):
                return None  # the other model's vector: no failure of the provider's
            assert provider is not None  # a call is sent only to a provider (`start_query`)
            # the provider's own dimension: `switch` records it as the file's
            check_shape(provider.name, matrix, 1, provider.dim)
        except Exception as exc:  # noqa: BLE001 - a recall goes on without the vector arm
            embeddings.failed(exc, "recall goes on without the vector arm")
            return None
        finally:
            done_at = self._done_at if self._done_at is not None else time.perf_counter()
            self.embed_ms = round((done_at - self.started) * 1000, 3)
        self.vector = matrix[0]
        assert self.text is not None  # only a text is ever embedded (`start_query`)
        embeddings.remember([self.text], matrix, self.generation)
        return self.vector


class Embeddings:
    def __init__(self, provider: EmbeddingProvider | None) -> None:
        self.provider = provider
        self.generation = 0  # bumped by every switch of provider
        self.last_error: str | None = None
        self.failed_at = float("-inf")  # monotonic time of the last provider failure
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()  # prepare runs on several threads at once

    def switch(self, provider: EmbeddingProvider) -> None:
        with self._cache_lock:
            self.generation += 1
            self.provider = provider
            self._cache.clear()

    def replaced_since(self, generation: int) -> bool:
        """A rebind switched the provider after `generation` began: what that one embeds is
        of another model (a shape unlike the file's is then no failure of the provider)."""
        return generation != self.generation

    def backing_off(self) -> bool:
        return time.monotonic() - self.failed_at < FAILURE_BACKOFF_S

    def cached(self, texts: list[str]) -> list[np.ndarray | None]:
        with self._cache_lock:
            return [self._cache.get(t) for t in texts]

    def clear(self) -> None:
        with self._cache_lock:
            self._cache.clear()

    def drop(self, text: str) -> None:
        with self._cache_lock:
            self._cache.pop(text, None)

    def watch_deletes(self, conn: Connection) -> None:
        """Drop each text a delete on this (writer) connection removes from the file."""
        conn.create_function(DELETED_TEXT_FUNCTION, 1, self.drop)
        for name, body in _DELETED_TEXT_TRIGGERS.items():
            conn.execute(
                f"CREATE TEMP TRIGGER IF NOT EXISTS minisphere_deleted_{name}_text "
                + body.format(fn=DELETED_TEXT_FUNCTION)
            )

    def embed(self, texts: list[str]) -> list[np.ndarray | None]:
        """Vectors for texts (cache first, one provider call for the rest); None on failure."""
        provider, generation = self.provider, self.generation
        if provider is None or not texts:
            return [None] * len(texts)
        if self.backing_off():
            return self.cached(texts)
        with self._cache_lock:
            todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            try:
                matrix = np.asarray(provider.embed(todo), dtype=np.float32)
                if self.replaced_since(generation):  # its writes are embedded by the backfill
                    return [None] * len(texts)
                check_shape(provider.name, matrix, len(todo), provider.dim)
            except Exception as exc:  # noqa: BLE001 - a write must not fail because of the model
                self.failed(exc, "entries stay pending")
                return self.cached(texts)
            self.remember(todo, matrix, generation)
        return self.cached(texts)

    def start_query(self, text: str) -> QueryVector:
        """A recall's query vector, started now and waited for only where the recall needs it."""
        query = QueryVector(self, text)  # its generation: the one the call is sent in
        provider = query.provider
        [query.vector] = self.cached([text])
        if provider is None or query.vector is not None or self.backing_off():
            return query
        submit = getattr(provider, "submit", None)
        query.started = time.perf_counter()  # sending the call is part of the embedding's cost
        query.follow(
            _sent(submit, [text])
            if submit is not None
            else _query_threads().submit(provider.embed, [text])
        )
        return query

    def failed(self, exc: BaseException, consequence: str) -> None:
        self.last_error = f"{type(exc).__name__}: {exc}"
        self.failed_at = time.monotonic()
        log.warning("embedding failed, %s: %s", consequence, self.last_error)

    def remember(self, texts: list[str], matrix: np.ndarray, generation: int) -> None:
        with self._cache_lock:
            if self.replaced_since(generation):  # embedded by the provider a rebind replaced
                return
            for text, vector in zip(texts, matrix):
                self._cache[text] = vector
            while len(self._cache) > EMBED_CACHE_MAX:
                self._cache.popitem(last=False)
