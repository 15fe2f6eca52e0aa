"""Semantic dedup and auto-linking on capture (vector binding only).

For a new capture with vector v, the nearest non-deprecated entries by cosine:
  best ≥ block_cosine (0.95)       -> not stored: {"outcome": "blocked", "matchId", "cosine"}
  best ≥ candidate_cosine (0.85)   -> stored, tagged `duplicate-candidate`
  each of the link_max (3) nearest with cosine ≥ link_cosine (0.78)
                                   -> a `relates_to` edge, provenance `inferred`, weight = cosine
An exact (content-hash) duplicate keeps the engine's own answer (blocked / confirmed).
Existing edges between the same pair are never overwritten (an explicit link stays explicit).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from minisphere.engine import writes
from minisphere.engine.vectors import table

DEDUP_BLOCK_COSINE = 0.95        # at or above: the capture is a duplicate, not stored
DEDUP_CANDIDATE_COSINE = 0.85    # at or above: stored, tagged duplicate-candidate
AUTO_LINK_COSINE = 0.78          # at or above: relates_to edge, provenance inferred
AUTO_LINK_MAX = 3                # nearest neighbours linked at most
NEIGHBOUR_FETCH = 16             # KNN depth for the checks (deprecated neighbours are skipped)
DUPLICATE_CANDIDATE_TAG = "duplicate-candidate"
COSINE_TOLERANCE = 1e-5          # float32 vectors: a cosine this close to a threshold meets it


def meets(cosine: float, threshold: float) -> bool:
    return cosine >= threshold - COSINE_TOLERANCE


@dataclass(frozen=True)
class SemanticSettings:
    block_cosine: float = DEDUP_BLOCK_COSINE
    candidate_cosine: float = DEDUP_CANDIDATE_COSINE
    link_cosine: float = AUTO_LINK_COSINE
    link_max: int = AUTO_LINK_MAX


def neighbours(conn, vector: np.ndarray) -> list[tuple[str, float]]:
    """(id, cosine) of the nearest non-deprecated entries, best first."""
    pairs = table.knn(conn, vector, NEIGHBOUR_FETCH)
    if not pairs:
        return []
    marks = ",".join("?" * len(pairs))
    live = dict(conn.execute(f"SELECT seq, id FROM entries WHERE seq IN ({marks}) "
                             "AND status != 'deprecated'", [s for s, _ in pairs]).fetchall())
    return [(live[s], c) for s, c in pairs if s in live]


def _auto_link(conn, entry_id: str, near: list[tuple[str, float]], settings: SemanticSettings,
               provider_name: str, now_ms: int) -> list[dict]:
    linked = []
    for other, cosine in [n for n in near if meets(n[1], settings.link_cosine)][: settings.link_max]:
        src, dst = writes.canonical_endpoints(entry_id, other, "relates_to")
        weight = float(min(1.0, max(cosine, 1e-6)))
        metadata = json.dumps({"by": "auto-link", "cosine": round(cosine, 6),
                               "provider": provider_name}, sort_keys=True)
        cursor = conn.execute(
            "INSERT INTO edges(src, dst, type, weight, provenance, metadata, created_at, updated_at) "
            "VALUES (?, ?, 'relates_to', ?, 'inferred', ?, ?, ?) ON CONFLICT(src, dst, type) DO NOTHING",
            (src, dst, weight, metadata, now_ms, now_ms))
        if cursor.rowcount:
            linked.append({"id": other, "cosine": round(cosine, 6)})
    return linked


def capture(conn, args, now_ms: int, vector: np.ndarray, settings: SemanticSettings,
            provider_name: str) -> dict:
    from minisphere.engine.normalize import content_hash
    writes.check_content(args.content)
    exact = conn.execute("SELECT 1 FROM entries WHERE content_hash = ? LIMIT 1",
                         (content_hash(args.content),)).fetchone()
    if exact is not None:
        return writes.capture(conn, args, now_ms)
    near = neighbours(conn, vector)
    if near and meets(near[0][1], settings.block_cosine):
        return {"outcome": "blocked", "matchId": near[0][0], "cosine": round(near[0][1], 6),
                "semantic": True}
    result = writes.capture(conn, args, now_ms)
    if result.get("outcome") != "stored":
        return result
    entry_id = result["id"]
    seq = conn.execute("SELECT seq FROM entries WHERE id = ?", (entry_id,)).fetchone()[0]
    table.put(conn, seq, vector)
    if near and meets(near[0][1], settings.candidate_cosine):
        writes.add_tags(conn, entry_id, [DUPLICATE_CANDIDATE_TAG])
        result["duplicateCandidateOf"] = {"id": near[0][0], "cosine": round(near[0][1], 6)}
    result["autoLinked"] = _auto_link(conn, entry_id, near, settings, provider_name, now_ms)
    return result
