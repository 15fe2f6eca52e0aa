"""The vector arm of recall: KNN over `entries_vec`, prefilters respected.

With only the always-on exclusions (deprecated, auto-pattern: few entries), the KNN over-fetches
VECTOR_ROW_CAP × VECTOR_OVERFETCH neighbours and drops excluded ones; if that leaves fewer than
VECTOR_ROW_CAP while more may exist, or whenever a real prefilter applies (kind, tag, time), the
allowed seqs are pushed into the KNN itself (`rowid IN (SELECT … WHERE prefilter)`), so k counts
allowed entries only. Score = cosine similarity; nothing below VECTOR_MIN_COSINE is returned.
"""
from __future__ import annotations

import numpy as np

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.arms import Hit
from minisphere.engine.retrieval.prefilter import Prefilter
from minisphere.engine.vectors import table


def _ids(conn, seqs: list[int], where: str, params: list) -> dict[int, str]:
    if not seqs:
        return {}
    marks = ",".join("?" * len(seqs))
    return dict(conn.execute(f"SELECT e.seq, e.id FROM entries e WHERE e.seq IN ({marks}) AND {where}",
                             [*seqs, *params]).fetchall())


def vector_arm(conn, query_vector: np.ndarray, prefilter: Prefilter) -> list[Hit]:
    where, params = prefilter.sql()
    cap = T.VECTOR_ROW_CAP
    pairs: list[tuple[int, float]] = []
    if prefilter.only_always_on:
        fetched = table.knn(conn, query_vector, cap * T.VECTOR_OVERFETCH)
        allowed = _ids(conn, [s for s, _ in fetched], where, params)
        pairs = [(s, c) for s, c in fetched if s in allowed]
        if len(pairs) < cap and len(fetched) == cap * T.VECTOR_OVERFETCH:
            pairs = []   # too many excluded near the top: restrict inside the KNN instead
    if not pairs:
        pairs = table.knn(conn, query_vector, cap, f"SELECT e.seq FROM entries e WHERE {where}", params)
        allowed = _ids(conn, [s for s, _ in pairs], where, params)
    hits = [Hit(allowed[s], c, {"cosine": round(c, 6)}) for s, c in pairs
            if s in allowed and c >= T.VECTOR_MIN_COSINE]
    return hits[:cap]
