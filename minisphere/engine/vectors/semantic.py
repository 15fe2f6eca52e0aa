"""Semantic dedup and auto-linking on capture (vector binding only).

For a new capture with vector v, the nearest non-deprecated entries by cosine, each rule also
asking for lexical agreement (overlap = Jaccard of the word-pair shingles MMR uses):
  cosine ≥ block_cosine (0.95) and overlap ≥ 0.8
                                   -> not stored: {"outcome": "blocked", "matchId", "cosine"}
  cosine ≥ candidate_cosine (0.85) and overlap ≥ 0.5
                                   -> stored, tagged `duplicate-candidate`
  cosine ≥ hint_cosine (0.7) and the new text restates the neighbour with a detail changed
  (hints.py)                       -> stored, tagged `supersession-candidate`, answered with
                                      `supersessionHint` (the newest such neighbour), and an
                                      inferred `relates_to` edge that records it
                                      (engine/supersession_hints.py)
  each of the link_max (3) nearest with cosine ≥ link_cosine (0.78) that shares a specific
  word with it (a term in at most max(3, 1% of the entries))
                                   -> a `relates_to` edge, provenance `inferred`,
                                      weight = (cosine - 0.78) / (1 - 0.78) (at least 0.01)
A neighbour the new text restates with a detail changed is never a reason to block it (a changed
date, name or negation barely moves a cosine): it is stored, with the hint.
An exact (content-hash) duplicate keeps the engine's own answer (blocked / confirmed).
Existing edges between the same pair are never overwritten (an explicit link stays explicit).

Why lexical agreement: cosine alone calls casual turns the same memory ("Me too. Talk to you
later!" after "... soon!" is no duplicate, and small talk is no relation). The overlap rules
keep blocking and tagging to genuine restatements, and the shared specific word keeps
auto-links off small talk (between pleasantries a link would relate nothing).
The weight starts from 0 at the link threshold because the graph arm passes weight × score to a
neighbour: an edge drawn at the threshold is a weak hint, not a strong relation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from minisphere.engine import supersession_hints, writes
from minisphere.engine.db import Connection
from minisphere.engine.reads import entry_count
from minisphere.engine.retrieval.query_text import content_terms, document_frequency
from minisphere.engine.retrieval.rerank import jaccard, shingles
from minisphere.engine.retrieval.tuning import MMR_TEXT_CHARS
from minisphere.engine.vectors import hints, table
from minisphere.wire.answers import CaptureAnswer, NearEntry

if TYPE_CHECKING:
    from minisphere.engine.arguments import CaptureArgs

DEDUP_BLOCK_COSINE = 0.95  # at or above: the capture is a duplicate, not stored
DEDUP_BLOCK_MIN_OVERLAP = 0.8  # ...if it also shares this share of word pairs (Jaccard)
DEDUP_CANDIDATE_COSINE = 0.85  # at or above: stored, tagged duplicate-candidate
DEDUP_CANDIDATE_MIN_OVERLAP = 0.5
AUTO_LINK_COSINE = 0.78  # at or above: relates_to edge, provenance inferred
AUTO_LINK_MAX = 3  # nearest neighbours linked at most
AUTO_LINK_TERM_MAX_DOC_RATIO = 0.01  # a shared word counts if in at most 1% of entries...
AUTO_LINK_TERM_MIN_DOCS = 3  # ...or in at most 3 entries in a small workspace
AUTO_LINK_MIN_WEIGHT = 0.01  # the rescaled weight never reaches 0 (edge weights are > 0)
NEIGHBOUR_FETCH = 16  # KNN depth for the checks (deprecated neighbours are skipped)
DUPLICATE_CANDIDATE_TAG = "duplicate-candidate"
COSINE_TOLERANCE = 1e-5  # float32 vectors: a cosine this close to a threshold meets it


def meets(cosine: float, threshold: float) -> bool:
    return cosine >= threshold - COSINE_TOLERANCE


@dataclass(frozen=True)
class SemanticSettings:
    block_cosine: float = DEDUP_BLOCK_COSINE
    candidate_cosine: float = DEDUP_CANDIDATE_COSINE
    link_cosine: float = AUTO_LINK_COSINE
    link_max: int = AUTO_LINK_MAX
    block_min_overlap: float = DEDUP_BLOCK_MIN_OVERLAP
    candidate_min_overlap: float = DEDUP_CANDIDATE_MIN_OVERLAP
    link_term_max_doc_ratio: float = AUTO_LINK_TERM_MAX_DOC_RATIO
    link_term_min_docs: int = AUTO_LINK_TERM_MIN_DOCS
    hint_cosine: float = hints.HINT_COSINE
    hint_min_overlap: float = hints.HINT_MIN_OVERLAP

    def link_weight(self, cosine: float) -> float:
        span = max(1.0 - self.link_cosine, 1e-6)
        return float(min(1.0, max(AUTO_LINK_MIN_WEIGHT, (cosine - self.link_cosine) / span)))


def neighbours(conn: Connection, vector: np.ndarray) -> list[tuple[str, float, str, int]]:
    """(id, cosine, content, seq) of the nearest non-deprecated entries, best first."""
    pairs = table.knn(conn, vector, NEIGHBOUR_FETCH)
    if not pairs:
        return []
    marks = ",".join("?" * len(pairs))
    live = {
        seq: (entry_id, content)
        for seq, entry_id, content in conn.execute(
            f"SELECT seq, id, content FROM entries WHERE seq IN ({marks}) AND status != 'deprecated'",
            [s for s, _ in pairs],
        ).fetchall()
    }
    return [(live[s][0], c, live[s][1], s) for s, c in pairs if s in live]


def _first_agreeing(
    near: list[tuple[str, float, str, int]],
    shingle_set: frozenset[Any],
    cosine: float,
    overlap: float,
) -> tuple[str, float] | None:
    """The nearest neighbour at or above `cosine` whose word pairs overlap at least `overlap`."""
    for entry_id, c, content, _ in near:
        if not meets(c, cosine):
            break
        if jaccard(shingle_set, shingles(content)) >= overlap:
            return entry_id, c
    return None


def _specific_terms(conn: Connection, texts: list[str], settings: SemanticSettings) -> set[str]:
    """Stems of these texts found in few entries: the words a relation can rest on."""
    stems = sorted({t for text in texts for t in content_terms(text[:MMR_TEXT_CHARS])})
    if not stems:
        return set()
    cap = max(settings.link_term_min_docs, settings.link_term_max_doc_ratio * entry_count(conn))
    frequency = document_frequency(conn, stems)
    return {t for t in stems if frequency.get(t, 0) <= cap}


def _auto_link(
    conn: Connection,
    entry_id: str,
    content: str,
    near: list[tuple[str, float, str, int]],
    settings: SemanticSettings,
    provider_name: str,
    now_ms: int,
) -> list[NearEntry]:
    close = [n for n in near if meets(n[1], settings.link_cosine)]
    if not close:
        return []
    own = set(content_terms(content[:MMR_TEXT_CHARS]))
    specific = _specific_terms(conn, [content], settings) & own
    linked: list[NearEntry] = []
    for other, cosine, other_content, _ in close:
        if len(linked) >= settings.link_max:
            break
        if not specific & set(content_terms(other_content[:MMR_TEXT_CHARS])):
            continue  # close by cosine only: small talk, not a shared subject
        src, dst = writes.canonical_endpoints(entry_id, other, "relates_to")
        weight = settings.link_weight(cosine)
        metadata = json.dumps(
            {"by": "auto-link", "cosine": round(cosine, 6), "provider": provider_name},
            sort_keys=True,
        )
        cursor = conn.execute(
            "INSERT INTO edges(src, dst, type, weight, provenance, metadata, created_at, updated_at) "
            "VALUES (?, ?, 'relates_to', ?, 'inferred', ?, ?, ?) ON CONFLICT(src, dst, type) DO NOTHING",
            (src, dst, weight, metadata, now_ms, now_ms),
        )
        if cursor.rowcount:
            linked.append({"id": other, "cosine": round(cosine, 6)})
    return linked


def _changes_detail(
    neighbour: tuple[str, float, str, int], content: str, settings: SemanticSettings
) -> bool:
    """A close neighbour that `content` restates with a number, name or negation changed: a
    new fact, however near its vector, so never blocked as a duplicate of it."""
    return meets(neighbour[1], settings.block_cosine) and (
        hints.compare(neighbour[2], content, settings.hint_min_overlap) is not None
    )


def capture(
    conn: Connection,
    args: CaptureArgs,
    now_ms: int,
    vector: np.ndarray,
    settings: SemanticSettings,
    provider_name: str,
) -> CaptureAnswer:
    from minisphere.engine.normalize import content_hash

    writes.check_content(args.content)
    exact = conn.execute(
        "SELECT 1 FROM entries WHERE content_hash = ? LIMIT 1", (content_hash(args.content),)
    ).fetchone()
    if exact is not None:
        return writes.capture(conn, args, now_ms)
    near = neighbours(conn, vector)
    own_shingles = shingles(args.content)
    duplicate = _first_agreeing(
        [n for n in near if not _changes_detail(n, args.content, settings)],
        own_shingles,
        settings.block_cosine,
        settings.block_min_overlap,
    )
    if duplicate is not None:
        return {
            "outcome": "blocked",
            "matchId": duplicate[0],
            "cosine": round(duplicate[1], 6),
            "semantic": True,
        }
    result = writes.capture(conn, args, now_ms)
    entry_id = result.get("id")
    if result["outcome"] != "stored" or entry_id is None:
        return result
    seq = conn.execute("SELECT seq FROM entries WHERE id = ?", (entry_id,)).fetchone()[0]
    table.put(conn, seq, vector)
    candidate = _first_agreeing(
        near, own_shingles, settings.candidate_cosine, settings.candidate_min_overlap
    )
    if candidate is not None:
        writes.add_tags(conn, entry_id, [DUPLICATE_CANDIDATE_TAG])
        result["duplicateCandidateOf"] = {"id": candidate[0], "cosine": round(candidate[1], 6)}
    close = [n for n in near if meets(n[1], settings.hint_cosine)]
    hint = hints.find(close, args.content, settings.hint_min_overlap)
    if hint is not None:  # before the auto-links: the pair's edge is the hint's
        weight = settings.link_weight(hint["cosine"])  # the graph arm reads it as an auto-link's
        supersession_hints.record(conn, entry_id, hint, weight, provider_name, now_ms)
        result["supersessionHint"] = hint
    result["autoLinked"] = _auto_link(
        conn, entry_id, args.content, near, settings, provider_name, now_ms
    )
    return result
