"""One backfill: embed every entry of a bound workspace that lacks a vector.

A batch is read, embedded with no lock held, and its vectors written in one short transaction,
only where the entry's content is still the one embedded (a write meanwhile leaves it to the
next backfill). A rebind in between ends the run (that bind backfills with the new provider), a
close stops it at its next batch. The binding holds its backfill lock around a run: one at a
time, whoever started it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol, TypedDict

import numpy as np

from minisphere.engine import db
from minisphere.engine.clock import Clock
from minisphere.engine.embedding.base import EmbeddingProvider
from minisphere.engine.vectors import table
from minisphere.engine.vectors.embeddings import Embeddings
from minisphere.errors import InvalidArgument, WorkspaceClosed

BACKFILL_BATCH_SIZE = 64  # entries embedded per backfill step (one short write each)
Progress = Callable[[int, int], None]


class Storage(Protocol):
    """What the binding uses of its workspace: the writer connection, to read or to write."""

    @property
    def clock(self) -> Clock: ...

    def reading(self) -> AbstractContextManager[db.Connection]: ...

    def transaction(self) -> AbstractContextManager[db.Connection]: ...


class Backfilled(Protocol):
    """What a backfill uses of the binding it runs for (`VectorBinding`)."""

    storage: Storage
    embeddings: Embeddings
    closing: bool

    @property
    def provider(self) -> EmbeddingProvider | None: ...

    @property
    def generation(self) -> int: ...

    def transaction_ended(self, conn: db.Connection) -> None: ...

    def touched(self, seq: int) -> None: ...


class BackfillSummary(TypedDict):
    embedded: int
    skipped: int  # entries whose content changed while they were embedded
    total: int
    seconds: float


def embed_missing(
    binding: Backfilled, batch_size: int | None, progress: Progress | None
) -> BackfillSummary:
    """Embed, in batches, every entry lacking a vector (module doc); a summary of the run."""
    provider, generation = binding.provider, binding.generation
    if provider is None:
        raise InvalidArgument("no embedding provider attached to this workspace")
    started = time.perf_counter()
    with binding.storage.reading() as conn:
        total = table.missing_count(conn)
    done, skipped, after = 0, 0, 0
    if progress:
        progress(0, total)
    while not binding.closing:
        with binding.storage.reading() as conn:
            batch = table.missing(conn, max(1, batch_size or BACKFILL_BATCH_SIZE), after)
        if not batch:
            break
        after = batch[-1][0]
        texts = [content for _, content, _ in batch]
        try:
            matrix = np.asarray(provider.embed(texts), dtype=np.float32)
        except Exception as exc:  # noqa: BLE001 - the entries stay pending
            binding.embeddings.failed(exc, "backfill stopped")
            break
        written = _write(binding, generation, batch, matrix)
        if written is None:  # rebound meanwhile: that bind backfills
            break
        done, skipped = done + written[0], skipped + written[1]
        with binding.storage.reading() as conn:  # a binding attaching at open has no
            binding.transaction_ended(conn)  # workspace hooks to do this yet
        total = max(total, done)  # entries written meanwhile are embedded here too
        if progress:
            progress(done, total)
    if binding.closing:  # a rebind cut short is not done: the next open finishes it
        raise WorkspaceClosed("the workspace closed during a backfill")
    if progress and done < total and generation == binding.generation:
        with binding.storage.reading() as conn:
            if table.missing_count(conn) == 0:
                # a write's after-commit backfill embedded the rest first: complete
                progress(total, total)
    return {
        "embedded": done,
        "skipped": skipped,
        "total": total,
        "seconds": round(time.perf_counter() - started, 3),
    }


def _write(
    binding: Backfilled,
    generation: int,
    batch: list[tuple[int, str, str]],
    matrix: np.ndarray,
) -> tuple[int, int] | None:
    """(written, skipped) of one embedded batch, in one short transaction; None when the
    binding was rebound since `generation` (nothing written)."""
    written = skipped = 0
    with binding.storage.transaction() as conn:
        if generation != binding.generation:
            return None
        for (seq, content, _), vector in zip(batch, matrix):
            row = conn.execute("SELECT content FROM entries WHERE seq = ?", (seq,)).fetchone()
            if row is None or row[0] != content:
                skipped += 1  # changed while it was embedded: the next backfill's
                continue
            table.put(conn, seq, vector)
            binding.touched(seq)
            written += 1
    return written, skipped
