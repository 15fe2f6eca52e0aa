"""The dense arm's say on a bound recall whose fusion left the lexical order alone.

Where the lexical arm barely backs the dense arm's head, fusion gives the lexical arm the
whole say (lexical share 1, fusion.py): on conversations that is most questions, since short
chit-chat turns sit close to any question. The cosine still knows what the words miss, and
one bounded move uses it without handing the head of the page to the dense arm: the MMR pool
re-scored, key(d) = final(d) / best final in the pool + HYBRID_PAGE_COSINE_WEIGHT × cosine(d).
Raw cosines of short turns sit in a narrow band, so this mostly breaks near-ties of the lexical
score and lets a turn just below the page in; an entry the words did not find scores weight ×
its cosine, below any match at `weight` of the best final with a cosine ≥ 0. The key is what
the item's `score` and `breakdown.final` show.

Off at weight 0; it never runs where fusion gave the dense arm a say (passages, mostly).
Cosines are exact (the pool's stored vectors), not the KNN's.
"""

from __future__ import annotations

from minisphere.engine.retrieval import tuning as T


def cosine_keys(final_of: dict[str, float], cosine_of: dict[str, float]) -> dict[str, float]:
    """final / best final + HYBRID_PAGE_COSINE_WEIGHT × cosine for each entry of `final_of`; an
    entry without a stored vector counts the lowest cosine among them."""
    best = max(final_of.values(), default=0.0)
    scale = best if best > 0 else 1.0
    floor = min(cosine_of.values(), default=0.0)
    weight = T.HYBRID_PAGE_COSINE_WEIGHT
    return {i: final / scale + weight * cosine_of.get(i, floor) for i, final in final_of.items()}
