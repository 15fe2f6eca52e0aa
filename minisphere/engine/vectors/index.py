"""The resident KNN: a workspace's stored vectors as one in-memory matrix.

A recall's KNN over sqlite-vec costs a couple of milliseconds however few the entries (vec0
reads its chunks for every query); the same search over a normalized float32 matrix in memory
is one matrix-vector product. The file's `entries_vec` stays the durable copy and the truth:
this index is rebuilt from it when the workspace opens or is rebound, and after every write
transaction the rows it touched are read back from it (`sync`).

Which rows a transaction touched is recorded by TEMP triggers on the writer's connection
(an entry inserted, deleted, or its content set), and by the binding wherever it stores a
vector for an entry no such statement touched (a backfill, an update to the same content). Reading the touched rows
back after the transaction ended, committed or rolled back, needs no bookkeeping of savepoints.

Readers (the read pool's threads) search while the writer syncs: every access holds `_lock`,
and a search copies out only its answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from minisphere.engine.db import Connection
from minisphere.engine.vectors import table

TOUCHED_FUNCTION = "minisphere_vector_touched"
INITIAL_ROWS = 64  # rows allocated before the first growth (doubling after)
_TRIGGERS = {  # TEMP: on the writer's connection only, gone when it closes
    "inserted": "AFTER INSERT ON main.entries BEGIN SELECT {fn}(new.seq); END",
    "deleted": "AFTER DELETE ON main.entries BEGIN SELECT {fn}(old.seq); END",
    "content": "AFTER UPDATE OF content ON main.entries BEGIN SELECT {fn}(new.seq); END",
}


def watch(conn: Connection, touch: Callable[[int], None]) -> None:
    """Have `touch(seq)` called on this (writer) connection for each entry a write inserts,
    deletes or sets the content of."""
    conn.create_function(TOUCHED_FUNCTION, 1, touch)
    for name, body in _TRIGGERS.items():
        conn.execute(
            f"CREATE TEMP TRIGGER IF NOT EXISTS minisphere_vector_{name} "
            + body.format(fn=TOUCHED_FUNCTION)
        )


def _unit(vector: np.ndarray) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


class VectorIndex:
    """seq -> unit vector, searchable by cosine. Rows [0, n) of `_matrix`/`_seqs` are live."""

    def __init__(self, dim: int):
        self.dim = int(dim)
        self._lock = threading.Lock()
        self._matrix = np.zeros((INITIAL_ROWS, self.dim), dtype=np.float32)
        self._seqs = np.zeros(INITIAL_ROWS, dtype=np.int64)
        self._row_of: dict[int, int] = {}
        self._touched: set[int] = set()

    def __len__(self) -> int:
        return len(self._row_of)

    # ---- keeping equal to the file ----------------------------------------------------------
    def rebuild(self, conn: Connection) -> None:
        """Every stored vector, read from `entries_vec` (on open and after a rebind)."""
        rows = conn.execute(f"SELECT rowid, embedding FROM {table.VEC_TABLE}").fetchall()
        size = max(INITIAL_ROWS, len(rows))
        matrix = np.zeros((size, self.dim), dtype=np.float32)
        seqs = np.zeros(size, dtype=np.int64)
        if rows:
            stored = np.frombuffer(b"".join(data for _, data in rows), dtype=np.float32)
            stored = stored.reshape(len(rows), self.dim)
            norms = np.linalg.norm(stored, axis=1, keepdims=True)
            matrix[: len(rows)] = stored / np.where(norms > 0, norms, 1.0)
            seqs[: len(rows)] = [seq for seq, _ in rows]
        with self._lock:
            self._touched.clear()
            self._matrix, self._seqs = matrix, seqs
            self._row_of = {int(seq): row for row, (seq, _) in enumerate(rows)}

    def touch(self, seq: int) -> None:
        """Mark an entry whose vector may have changed (read back at the next `sync`)."""
        with self._lock:
            self._touched.add(int(seq))

    def sync(self, conn: Connection) -> None:
        """Read back the touched entries' vectors (outside any transaction, the writer's lock
        held): a row present is set, a row gone is dropped."""
        with self._lock:
            touched, self._touched = self._touched, set()
        if not touched:
            return
        found = {}
        for seq in touched:
            row = conn.execute(
                f"SELECT embedding FROM {table.VEC_TABLE} WHERE rowid = ?", (seq,)
            ).fetchone()
            found[seq] = None if row is None else np.frombuffer(row[0], dtype=np.float32)
        with self._lock:
            for seq, vector in found.items():
                if vector is None:
                    self._drop(seq)
                else:
                    self._set(seq, vector)

    def _set(self, seq: int, vector: np.ndarray) -> None:
        row = self._row_of.get(seq)
        if row is None:
            row = len(self._row_of)
            if row == len(self._seqs):
                self._matrix = np.concatenate([self._matrix, np.zeros_like(self._matrix)])
                self._seqs = np.concatenate([self._seqs, np.zeros_like(self._seqs)])
            self._row_of[seq] = row
            self._seqs[row] = seq
        self._matrix[row] = _unit(vector)

    def _drop(self, seq: int) -> None:
        row = self._row_of.pop(seq, None)
        if row is None:
            return
        last = len(self._row_of)  # the last live row moves into the gap
        if row != last:
            moved = int(self._seqs[last])
            self._matrix[row], self._seqs[row] = self._matrix[last], moved
            self._row_of[moved] = row

    # ---- searching ---------------------------------------------------------------------------
    def vector(self, seq: int) -> np.ndarray | None:
        with self._lock:
            row = self._row_of.get(int(seq))
            return None if row is None else self._matrix[row].copy()

    def search(
        self,
        conn: Connection,
        query: np.ndarray,
        k: int,
        restrict_sql: str | None = None,
        params: list[Any] | None = None,
    ) -> list[tuple[int, float]]:
        """`table.knn`'s answer from memory: `restrict_sql` (a subquery of allowed seqs) is run
        on `conn` to mask the matrix."""
        allowed = None
        if restrict_sql:
            allowed = np.fromiter(
                (seq for (seq,) in conn.execute(restrict_sql, params or [])), dtype=np.int64
            )
        return self.knn(query, k, allowed)

    def knn(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """(seq, cosine) of the k nearest stored vectors, best first; `allowed`: only these
        seqs (the prefilter)."""
        q = _unit(query)
        if q.shape != (self.dim,):  # a query of the provider a rebind replaced
            return []
        with self._lock:
            n = len(self._row_of)
            cosines = self._matrix[:n] @ q
            seqs = self._seqs[:n].copy()
        if allowed is not None:
            keep = np.isin(seqs, allowed)
            cosines, seqs = cosines[keep], seqs[keep]
        k = max(1, min(int(k), table.KNN_MAX_K, len(seqs)))
        if not len(seqs):
            return []
        top = np.argpartition(-cosines, k - 1)[:k] if k < len(seqs) else np.arange(len(seqs))
        top = top[np.lexsort((seqs[top], -cosines[top]))]
        return [(int(seqs[i]), float(cosines[i])) for i in top]
