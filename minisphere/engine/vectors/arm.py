"""The vector arm of recall: KNN over the stored vectors, prefilters respected.

The search runs over the workspace's resident index (index.py: the same vectors in memory)
when the binding has one, else over `entries_vec` itself; both give the same neighbours.

With only the always-on exclusions (deprecated, auto-pattern: few entries), the KNN over-fetches
VECTOR_ROW_CAP × VECTOR_OVERFETCH neighbours and drops excluded ones; if that leaves fewer than
VECTOR_ROW_CAP while more may exist, or whenever a real prefilter applies (kind, tag, time), the
allowed seqs are pushed into the KNN itself (`rowid IN (SELECT … WHERE prefilter)`), so k counts
allowed entries only. Score = cosine similarity; nothing below VECTOR_MIN_COSINE is returned.

`VectorArm` is what a bound recall gets: the KNN for the query vector, and `refine`, one round
of feedback for the hybrid fusion (engine/retrieval/fusion.py): the query vector moved towards
the mean stored vector of the first fused page (Rocchio), then the KNN again. Only the head's
vectors are read back (a handful of rowid lookups: vec0 reads a stored vector at a per-row cost
of a chunk lookup, so re-reading a hundred candidates would cost more than a second KNN; from
the resident index they cost nothing to speak of).

`DeferredVectorArm` is what a bound recall gets while its query is still being embedded: the
embedding starts before the recall's lexical stages and runs beside them (in the embedder's
process, or on a thread), and `resolve()` waits for it only where the vector arm runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from minisphere.engine.db import Connection
from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.arms import Hit
from minisphere.engine.retrieval.sql_filters import Prefilter
from minisphere.engine.vectors import table
from minisphere.engine.vectors.index import VectorIndex


def _ids(conn: Connection, seqs: list[int], where: str, params: list[Any]) -> dict[int, str]:
    if not seqs:
        return {}
    marks = ",".join("?" * len(seqs))
    return dict(
        conn.execute(
            f"SELECT e.seq, e.id FROM entries e WHERE e.seq IN ({marks}) AND {where}",
            [*seqs, *params],
        ).fetchall()
    )


def vector_arm(
    conn: Connection,
    query_vector: np.ndarray,
    prefilter: Prefilter,
    index: VectorIndex | None = None,
) -> list[Hit]:
    """The KNN arm alone (dense-only)."""
    return VectorArm(query_vector, index).hits(conn, prefilter)


def stored_vectors_by_id(
    conn: Connection, entry_ids: list[str], index: VectorIndex | None = None
) -> dict[str, np.ndarray]:
    """The stored vector of each listed entry that has one (without an index, one rowid
    lookup each in sqlite-vec: meant for a head or a page, not for every candidate)."""
    if not entry_ids:
        return {}
    marks = ",".join("?" * len(entry_ids))
    out = {}
    for entry_id, seq in conn.execute(
        f"SELECT id, seq FROM entries WHERE id IN ({marks})", entry_ids
    ).fetchall():
        if index is not None:
            vector = index.vector(seq)
        else:
            row = conn.execute(
                f"SELECT embedding FROM {table.VEC_TABLE} WHERE rowid = ?", (seq,)
            ).fetchone()
            vector = None if row is None else np.frombuffer(row[0], dtype=np.float32)
        if vector is not None:
            out[entry_id] = vector
    return out


def stored_vectors(
    conn: Connection, entry_ids: list[str], index: VectorIndex | None = None
) -> np.ndarray:
    """The stored vectors of these entries (those that have one), one row each."""
    vectors = list(stored_vectors_by_id(conn, entry_ids, index).values())
    return np.stack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)


class VectorArm:
    def __init__(self, query_vector: np.ndarray, index: VectorIndex | None = None):
        self.query = np.asarray(query_vector, dtype=np.float32)
        self.index = index

    def cosines(self, conn: Connection, entry_ids: list[str]) -> dict[str, float]:
        """Exact cosine of the query to each listed entry that has a stored vector (vectors are
        stored normalised)."""
        return {
            entry_id: float(np.dot(self.query, vector))
            for entry_id, vector in stored_vectors_by_id(conn, entry_ids, self.index).items()
        }

    def resolve(self) -> VectorArm:
        """The arm itself: its query vector is already there."""
        return self

    def hits(
        self, conn: Connection, prefilter: Prefilter, vector: np.ndarray | None = None
    ) -> list[Hit]:
        search = self.index.search if self.index is not None else table.knn
        return _knn_hits(conn, self.query if vector is None else vector, prefilter, search)

    def refine(self, conn: Connection, prefilter: Prefilter, head_ids: list[str]) -> list[Hit]:
        """The KNN again for query + VECTOR_FEEDBACK_WEIGHT × mean vector of the head."""
        head = stored_vectors(conn, head_ids, self.index)
        if not len(head):
            return []
        moved = self.query + T.VECTOR_FEEDBACK_WEIGHT * head.mean(axis=0)
        norm = float(np.linalg.norm(moved))
        if norm == 0.0:
            return []
        return self.hits(conn, prefilter, (moved / norm).astype(np.float32))


class DeferredVectorArm:
    """A vector arm whose query vector is still on its way. `wait()` blocks until the vector is
    there and returns it, or None when embedding failed (the recall then goes on without the
    vector arm, as an unbound one would)."""

    def __init__(self, wait: Callable[[], np.ndarray | None], index: VectorIndex | None = None):
        self._wait = wait
        self._index = index

    def resolve(self) -> VectorArm | None:
        vector = self._wait()
        return VectorArm(vector, self._index) if vector is not None else None


def _knn_hits(
    conn: Connection,
    query_vector: np.ndarray,
    prefilter: Prefilter,
    knn: Callable[..., list[tuple[int, float]]],
) -> list[Hit]:
    where, params = prefilter.sql()
    cap = T.VECTOR_ROW_CAP
    pairs: list[tuple[int, float]] = []
    if prefilter.only_always_on:
        fetched = knn(conn, query_vector, cap * T.VECTOR_OVERFETCH)
        # the over-fetched tail is looked up only when the head lost some to the exclusions
        allowed = _ids(conn, [s for s, _ in fetched[:cap]], where, params)
        if len(allowed) < min(cap, len(fetched)):
            allowed.update(_ids(conn, [s for s, _ in fetched[cap:]], where, params))
        pairs = [(s, c) for s, c in fetched if s in allowed]
        if len(pairs) < cap and len(fetched) == cap * T.VECTOR_OVERFETCH:
            pairs = []  # too many excluded near the top: restrict inside the KNN instead
    if not pairs:
        pairs = knn(conn, query_vector, cap, f"SELECT e.seq FROM entries e WHERE {where}", params)
        allowed = _ids(conn, [s for s, _ in pairs], where, params)
    hits = [
        Hit(allowed[s], c, {"cosine": round(c, 6)})
        for s, c in pairs
        if s in allowed and c >= T.VECTOR_MIN_COSINE
    ]
    return hits[:cap]
