"""The `entries_vec` vec0 table: one L2-normalized float32 vector per entry, rowid = entries.seq.

Created only when a workspace is bound; the binding (provider name, dim) is recorded in
`workspace_meta` under META_KEY, so a file is never searched with vectors of another model.
A trigger deletes an entry's vector with the entry (forget) and when its content changes
(update/append), so a stale vector can never be matched; the engine then writes the new one.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from minisphere.engine import db
from minisphere.engine.constants import VECTOR_BINDING_META_KEY as META_KEY
from minisphere.errors import InvalidArgument

VEC_TABLE = "entries_vec"
KNN_MAX_K = 4096  # sqlite-vec's own cap on k


def ensure_extension(conn: db.Connection) -> None:
    """Load sqlite-vec into a connection that does not have it yet (e.g. a read-only one)."""
    try:
        conn.execute("SELECT vec_version()").fetchone()
    except Exception:  # noqa: BLE001 - "no such function": not loaded on this connection
        db.load_sqlite_vec(conn)


def create(conn: db.Connection, provider_name: str, dim: int, now_ms: int) -> dict[str, Any]:
    """Create the vec table + triggers and record the binding (inside the caller's transaction)."""
    if not 1 <= dim <= 8192:
        raise InvalidArgument(f"vector dim must be in 1..8192, got {dim}")
    conn.execute(
        f"CREATE VIRTUAL TABLE {VEC_TABLE} USING vec0("
        f"embedding float[{int(dim)}] distance_metric=cosine)"
    )
    conn.execute(
        f"CREATE TRIGGER {VEC_TABLE}_forget AFTER DELETE ON entries BEGIN "
        f"DELETE FROM {VEC_TABLE} WHERE rowid = old.seq; END"
    )
    conn.execute(
        f"CREATE TRIGGER {VEC_TABLE}_stale AFTER UPDATE OF content ON entries "
        f"WHEN old.content IS NOT new.content BEGIN "
        f"DELETE FROM {VEC_TABLE} WHERE rowid = old.seq; END"
    )
    binding = {"provider": provider_name, "dim": int(dim), "boundAt": now_ms}
    db.write_meta(conn, META_KEY, json.dumps(binding))
    return binding


def drop(conn: db.Connection) -> None:
    conn.execute(f"DROP TRIGGER IF EXISTS {VEC_TABLE}_forget")
    conn.execute(f"DROP TRIGGER IF EXISTS {VEC_TABLE}_stale")
    conn.execute(f"DROP TABLE IF EXISTS {VEC_TABLE}")
    db.write_meta(conn, META_KEY, None)


def blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def put(conn: db.Connection, seq: int, vector: np.ndarray) -> None:
    conn.execute(f"DELETE FROM {VEC_TABLE} WHERE rowid = ?", (seq,))
    conn.execute(f"INSERT INTO {VEC_TABLE}(rowid, embedding) VALUES (?, ?)", (seq, blob(vector)))


def missing(conn: db.Connection, limit: int, after_seq: int = 0) -> list[tuple[int, str, str]]:
    """(seq, content, content_hash) of entries without a vector, oldest first."""
    return conn.execute(
        f"SELECT e.seq, e.content, e.content_hash FROM entries e WHERE e.seq > ? AND NOT EXISTS "
        f"(SELECT 1 FROM {VEC_TABLE} v WHERE v.rowid = e.seq) ORDER BY e.seq LIMIT ?",
        (after_seq, limit),
    ).fetchall()


def missing_count(conn: db.Connection) -> int:
    missing: int = conn.execute(
        f"SELECT (SELECT COUNT(*) FROM entries) - (SELECT COUNT(*) FROM {VEC_TABLE})"
    ).fetchone()[0]
    return missing


def knn(
    conn: db.Connection,
    vector: np.ndarray,
    k: int,
    restrict_sql: str | None = None,
    params: list[Any] | None = None,
) -> list[tuple[int, float]]:
    """(seq, cosine) of the k nearest vectors, best first. `restrict_sql` is a subquery of
    allowed seqs (the prefilter), applied inside the KNN so k counts allowed entries only."""
    k = max(1, min(int(k), KNN_MAX_K))
    sql = f"SELECT rowid, distance FROM {VEC_TABLE} WHERE embedding MATCH ? AND k = ?"
    args: list[Any] = [blob(vector), k]
    if restrict_sql:
        sql += f" AND rowid IN ({restrict_sql})"
        args += params or []
    return [(seq, 1.0 - distance) for seq, distance in conn.execute(sql, args).fetchall()]
