"""Rerank factors and MMR.

final = fused × decay × recall × importance × tagOverlap × rolledUp, where every factor is a
bounded multiplier and 1.0 means "no opinion":

  decay      = floor + (1 - floor) × 0.5^(age / halfLife)   age = now - updated_at
               floor / halfLife by volatility: durable 0.9 / 365 d, state 0.6 / 30 d,
               volatile 0.15 / 3 d           -> in [floor, 1], never zero
  recall     = 1 + 0.05 × min(1, log1p(recall_count))      -> in [1, 1.05]
  importance = 1 + 0.2 × importance                        -> in [1, 1.2]
  tagOverlap = 1 + 0.15 × (share of query terms that name one of the entry's tags) -> [1, 1.15]
  rolledUp   = 0.4 if tagged `rolled-up` else 1

A fresh entry with importance 0 that was never recalled gets ×1 from every factor: it ranks by
relevance alone.

MMR then picks topK from the best topK × 3: at each step the candidate maximising
  λ × relevance - (1 - λ) × max similarity to the already picked ones   (λ = 0.7)
where relevance is the final score min-max scaled over the pool to [0, 1] and similarity is the
Jaccard overlap of word-pair shingles (single words for texts under two terms). Shingles make the
penalty bite on near-duplicates and restatements, not on entries that merely share a topic.
"""
from __future__ import annotations

import math

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.query_text import content_terms


def decay_factor(volatility: str, age_ms: int) -> float:
    floor = T.DECAY_FLOOR[volatility]
    half_life = T.HALF_LIFE_MS[volatility]
    return floor + (1.0 - floor) * 0.5 ** (max(age_ms, 0) / half_life)


def recall_factor(recall_count: int) -> float:
    return 1.0 + T.RECALL_BOOST_MAX * min(1.0, math.log1p(max(recall_count, 0)))


def importance_factor(importance: float) -> float:
    return 1.0 + T.IMPORTANCE_BOOST_MAX * min(max(importance, 0.0), 1.0)


def tag_overlap_factor(query_stems: set[str], tags: list[str]) -> tuple[float, float]:
    if not query_stems or not tags:
        return 1.0, 0.0
    tag_stems = {s for tag in tags for s in content_terms(tag)}
    share = len(query_stems & tag_stems) / len(query_stems)
    return 1.0 + T.TAG_OVERLAP_BOOST_MAX * share, share


def rerank_factors(row: dict, now_ms: int, query_stems: set[str]) -> dict:
    tag_factor, tag_share = tag_overlap_factor(query_stems, row["tags"])
    factors = {
        "decay": decay_factor(row["volatility"], now_ms - row["updatedAt"]),
        "recall": recall_factor(row["recallCount"]),
        "importance": importance_factor(row["importance"]),
        "tagOverlap": tag_factor,
        "rolledUp": T.ROLLED_UP_FACTOR if "rolled-up" in row["tags"] else 1.0,
    }
    product = 1.0
    for value in factors.values():
        product *= value
    return {**factors, "tagShare": tag_share, "product": product}


def shingles(text: str) -> frozenset:
    terms = content_terms(text[: T.MMR_TEXT_CHARS])
    if len(terms) < 2:
        return frozenset(terms)
    return frozenset(zip(terms, terms[1:]))


def jaccard(a: frozenset, b: frozenset) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def similarity(a: frozenset, b: frozenset) -> float:
    """Jaccard overlap, counted only above MMR_SIMILARITY_FLOOR and rescaled to [0, 1]."""
    overlap = jaccard(a, b)
    floor = T.MMR_SIMILARITY_FLOOR
    return 0.0 if overlap <= floor else (overlap - floor) / (1.0 - floor)


def mmr(candidates: list[tuple[str, float]], texts: dict[str, str], top_k: int,
        lam: float = T.MMR_LAMBDA) -> list[tuple[str, dict]]:
    """candidates: (id, score) best first. Returns (id, {relevance, maxSimilarity, mmr})."""
    pool = candidates[: top_k * T.MMR_POOL_FACTOR]
    if not pool:
        return []
    high, low = pool[0][1], min(score for _, score in pool)
    spread = high - low
    relevance = {i: (s - low) / spread if spread > 0 else 1.0 for i, s in pool}
    sets = {i: shingles(texts[i]) for i, _ in pool}
    closest = {i: 0.0 for i, _ in pool}   # max similarity to anything picked so far
    chosen: list[tuple[str, dict]] = []
    while closest and len(chosen) < top_k:
        best_id = max(closest, key=lambda i: lam * relevance[i] - (1 - lam) * closest[i])
        sim = closest.pop(best_id)
        chosen.append((best_id, {"relevance": relevance[best_id], "maxSimilarity": sim,
                             "mmr": lam * relevance[best_id] - (1 - lam) * sim}))
        for i in closest:
            closest[i] = max(closest[i], similarity(sets[i], sets[best_id]))
    return chosen
