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
no vector yet (recall ranks it by the lexical arms meanwhile): `backfill` (`backfill.py`)
embeds every entry lacking one, in batches, outside the transaction, and writes only vectors
whose content is still current. After such a commit it runs on a thread of its own (`backfills.py`), never on the
writer's: re-embedding a whole workspace would hold every write behind it. Backfills run one at
a time, whoever started them (a rebind, a write, an open), and stop at a close.

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
from typing import Any, TypedDict

import numpy as np

from minisphere.engine import db
from minisphere.engine.arguments import CaptureArgs, RecallArgs
from minisphere.engine.embedding.base import EmbeddingProvider
from minisphere.engine.hooks import Handler, WorkspaceHooks
from minisphere.engine.methods import Method
from minisphere.engine.vectors import index as resident
from minisphere.engine.vectors import semantic, table
from minisphere.engine.vectors.arm import DeferredVectorArm
from minisphere.engine.vectors.backfill import BackfillSummary, Progress, Storage, embed_missing
from minisphere.engine.vectors.backfills import BackgroundBackfills
from minisphere.engine.vectors.embeddings import Embeddings, QueryVector
from minisphere.errors import InvalidArgument
from minisphere.wire.recall_answer import RecallAnswer, VectorArmState

log = logging.getLogger("minisphere.vectors")

HOOKED = frozenset({"capture", "update", "append", "recall"})


class BindingState(TypedDict):
    provider: str | None
    dim: int | None
    missing: int  # entries without a vector


def text_for(method_name: str, args: Any, conn: db.Connection | None) -> str | None:
    """The text whose vector a hooked call needs (`conn` is only read; None only for the
    calls `started_on_arrival`)."""
    text: str
    if method_name in ("capture", "update"):
        text = args.content
        return text
    if method_name == "recall":  # the whole query: "in 1990" is a filter AND a topic
        if args.as_of is not None:  # as of a moment recall is lexical (engine/as_of.py)
            return None
        text = args.query
        return text
    if method_name == "append":
        assert conn is not None
        row = conn.execute("SELECT content FROM entries WHERE id = ?", (args.id,)).fetchone()
        return f"{row[0].rstrip()}\n{args.addition.strip()}" if row else None
    return None


def attach(
    storage: Storage,
    provider: EmbeddingProvider | None = None,
    settings: semantic.SemanticSettings | None = None,
    reembed_other: bool = False,
) -> VectorBinding:
    """The binding of an open workspace; binding a provider to an unbound file backfills it.
    A file holding another provider's vectors is refused (InvalidArgument), or with
    `reembed_other` re-embedded with this one: the service's blueprint names the provider a
    workspace is to have, and a rebind cut short (or never begun) left the file on another."""
    binding = VectorBinding(storage, provider, settings, refuse_other=not reembed_other)
    if provider is not None:
        current = binding.binding
        if current is not None and not binding.holds(provider):
            log.warning(
                "%s holds vectors of %s (%d dims); re-embedding with %s",
                getattr(storage, "path", "workspace"),
                current["provider"],
                current["dim"],
                provider.name,
            )
            binding.bind(provider, replace=True)
        elif current is None:
            binding.bind(provider)
        else:  # entries captured while no embedder was attached: embed them now
            binding.backfill()
    return binding


class VectorBinding(WorkspaceHooks):
    hooked = HOOKED
    started_on_arrival = frozenset({"recall"})  # `prepare` only sends the query (start_query)

    def __init__(
        self,
        storage: Storage,
        provider: EmbeddingProvider | None = None,
        settings: semantic.SemanticSettings | None = None,
        refuse_other: bool = True,
    ) -> None:
        self.storage = storage
        self.embeddings = Embeddings(provider)
        self.settings = settings or semantic.SemanticSettings()
        self._needs_backfill = False
        self._backfilling = threading.RLock()  # held by the one backfill running
        self.closing = False
        self.backfills = BackgroundBackfills(self._backfill_if_bound, "vector-backfill")
        self.index: resident.VectorIndex | None = None
        with storage.reading() as conn:
            table.ensure_extension(conn)
            self.binding = db.read_vector_binding(conn)
            if self.binding is not None:
                self._open_index(conn)
            resident.watch(conn, self.touched)
            self.embeddings.watch_deletes(conn)
        if provider is not None and self.binding is not None and not self.holds(provider):
            if refuse_other:
                raise InvalidArgument(
                    f"workspace is bound to {self.binding['provider']} ({self.binding['dim']} "
                    f"dims), not {provider.name} ({provider.dim}); rebind with "
                    f"enable_vectors(provider, replace=True)"
                )
            self.embeddings.provider = None  # another provider's vectors: `attach` re-embeds

    # ---- binding lifecycle ---------------------------------------------------------------------
    def holds(self, provider: EmbeddingProvider) -> bool:
        """The file's vectors are this provider's."""
        return self.binding is not None and (
            (self.binding["provider"], self.binding["dim"]) == (provider.name, provider.dim)
        )

    def bind(
        self,
        provider: EmbeddingProvider,
        *,
        replace: bool = False,
        batch_size: int | None = None,
        progress: Progress | None = None,
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
                self.binding = table.create(
                    conn, provider.name, provider.dim, self.storage.clock.now_ms()
                )
                self._open_index(conn)
            elif (current["provider"], current["dim"]) != (provider.name, provider.dim):
                raise InvalidArgument(
                    f"workspace is bound to {current['provider']}; pass replace=True"
                )
            # inside the transaction: no write commits between the new table and the new provider
            self.embeddings.switch(provider)

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

    def touched(self, seq: int) -> None:
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
            log.exception(
                "resident vector index out of step with the file: dropped, recall "
                "searches sqlite-vec until the workspace reopens"
            )
            self.index = None

    # ---- embedding -------------------------------------------------------------------------------
    # the provider, its cache and its back-off (embeddings.py)
    @property
    def provider(self) -> EmbeddingProvider | None:
        return self.embeddings.provider

    @provider.setter
    def provider(self, provider: EmbeddingProvider | None) -> None:
        self.embeddings.provider = provider

    @property
    def generation(self) -> int:
        return self.embeddings.generation

    # ---- hooks -------------------------------------------------------------------------------------
    def prepare(
        self, calls: list[tuple[str, Any]], conn: db.Connection | None
    ) -> list[tuple[str | None, Any, int]]:
        """(text, vector, generation) per (method name, parsed args), all the writes' texts
        embedded in one call; a recall's vector is a QueryVector, started here and waited for
        by the recall."""
        generation = self.generation
        texts = [text_for(name, args, conn) if name in HOOKED else None for name, args in calls]
        wanted = [t for (name, _), t in zip(calls, texts) if t is not None and name != "recall"]
        vectors = dict(zip(wanted, self.embeddings.embed(wanted)))
        start_query = self.embeddings.start_query
        return [
            (
                t,
                start_query(t)
                if name == "recall" and t is not None
                else vectors.get(t)
                if t is not None
                else None,
                generation,
            )
            for (name, _), t in zip(calls, texts)
        ]

    def prepare_connection(self, conn: db.Connection) -> None:
        table.ensure_extension(conn)

    def handler(self, method: Method, prepared: Any) -> Handler | None:
        text, vector, generation = (
            prepared if prepared is not None else (None, None, self.generation)
        )
        name = method.name
        if name == "recall":
            from minisphere.engine.retrieval.recall import recall

            embeddings = self.embeddings
            query = (
                vector if isinstance(vector, QueryVector) else QueryVector(embeddings, text, vector)
            )

            def run_recall(conn: db.Connection, args: RecallArgs, now_ms: int) -> RecallAnswer:
                nonlocal query
                if args.as_of is not None:  # the vectors are of today's words, not of then
                    result = recall(conn, args, now_ms)
                    result["queryUsed"]["vector"] = {
                        "arm": "off",
                        "provider": self._recorded()["provider"],
                        "reason": "asOf: the vectors are of today's words",
                    }
                    return result
                if query.generation != self.generation:  # the other model's query vector
                    query = QueryVector(embeddings, text)
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
                assert self.provider is not None  # a current vector is the current provider's
                return semantic.capture(
                    conn, args, now_ms, vector, self.settings, self.provider.name
                )

            return run_capture
        if name in ("update", "append"):

            def run_change(conn: db.Connection, args: Any, now_ms: int) -> Any:
                result = method.handler(conn, args, now_ms)
                self._put_if_current(
                    conn, args.id, text, vector if generation == self.generation else None
                )
                return result

            return run_change
        return None

    def after_commit(self) -> None:
        if self._needs_backfill and not self.embeddings.backing_off():
            self._needs_backfill = False
            self.backfills.request()

    def wait_for_backfills(self, timeout: float | None = None) -> bool:
        """Until no backfill the writes asked for is left to run; False on `timeout`."""
        return self.backfills.wait_idle(timeout)

    def close(self) -> None:
        """Stop backfilling (a running one stops at its next batch) before the file closes."""
        self.closing = True
        self.backfills.close()

    def _backfill_if_bound(self) -> None:
        if self.provider is not None:
            self.backfill()

    def _arm_state(self, vector: np.ndarray | None) -> VectorArmState:
        if vector is not None:
            return {"arm": "on", "provider": self._recorded()["provider"]}
        reason = (
            "no embedder attached"
            if self.provider is None
            else f"embedding failed: {self.embeddings.last_error}"
        )
        return {"arm": "off", "provider": self._recorded()["provider"], "reason": reason}

    def _put_if_current(
        self, conn: db.Connection, entry_id: str, text: str | None, vector: np.ndarray | None
    ) -> None:
        row = conn.execute("SELECT seq, content FROM entries WHERE id = ?", (entry_id,)).fetchone()
        if row is None:
            return
        if vector is not None and text is not None and row[1] == text:
            table.put(conn, row[0], vector)
            self.touched(row[0])  # an unchanged content fires no trigger
        elif not conn.execute(
            f"SELECT 1 FROM {table.VEC_TABLE} WHERE rowid = ?", (row[0],)
        ).fetchone():
            self._needs_backfill = self.provider is not None

    # ---- backfill ----------------------------------------------------------------------------------
    def backfill(
        self, batch_size: int | None = None, progress: Progress | None = None
    ) -> BackfillSummary:
        """Embed every entry lacking a vector: read a batch, embed it with no lock held, write
        the vectors whose content is unchanged in one short transaction. Returns a summary.
        One runs at a time: another waits for it, then embeds what it left."""
        with self._backfilling:
            return embed_missing(self, batch_size, progress)
