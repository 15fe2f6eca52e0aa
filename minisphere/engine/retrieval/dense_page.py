"""The dense arm's say on a bound recall whose fusion left the lexical order alone.

Where the lexical arm barely backs the dense arm's head, fusion gives the lexical arm the
whole say (lexical share 1, fusion.py): on conversations that is most questions, since short
chit-chat turns sit close to any question. The cosine still knows two things the words miss,
and these two bounded moves use them without handing the head of the page to the dense arm:

1. The MMR pool re-scored: key(d) = final(d) / best final in the pool + HYBRID_PAGE_COSINE_WEIGHT
   × cosine(d). Raw cosines of short turns sit in a narrow band, so this mostly breaks near-ties
   of the lexical score and lets a turn just below the page in; an entry the words did not find
   scores weight × its cosine, below any match at `weight` of the best final with a cosine ≥ 0.
   The key is what the item's `score` and `breakdown.final` show.
2. Dense slots: the vector arm's best hits missing from the page take its last
   floor(topK × HYBRID_DENSE_TAIL_SHARE) places (the page's weakest entries leave; a page
   shorter than topK takes them in addition). A turn that answers in other words gets seen;
   the head stays the lexical arm's. Off (HYBRID_DENSE_TAIL_SHARE = 0): the agreement band
   (tuning.py) already leaves the chit-chat pages to the lexical arm, and the slots do not pay
   for themselves on unseen conversations.

Both are off at 0; neither runs where fusion gave the dense arm a say (passages, mostly).
Cosines are exact (the pool's stored vectors), not the KNN's.
"""
from __future__ import annotations

from typing import Any

from minisphere.engine.retrieval import tuning as T

Picked = list[tuple[str, dict[str, Any]]]
# what a dense slot's breakdown shows for MMR, which did not pick it (the answer's schema has
# these three fields): no relevance, no similarity, no MMR value
DENSE_SLOT_MMR = {"relevance": 0.0, "maxSimilarity": 0.0, "mmr": 0.0}


def dense_slot_count(top_k: int) -> int:
    return int(top_k * T.HYBRID_DENSE_TAIL_SHARE + 1e-9)   # 0.1 of 30 is 3, not 2.9999


def cosine_keys(final_of: dict[str, float], cosine_of: dict[str, float]) -> dict[str, float]:
    """final / best final + HYBRID_PAGE_COSINE_WEIGHT × cosine for each entry of `final_of`; an
    entry without a stored vector counts the lowest cosine among them."""
    best = max(final_of.values(), default=0.0)
    scale = best if best > 0 else 1.0
    floor = min(cosine_of.values(), default=0.0)
    weight = T.HYBRID_PAGE_COSINE_WEIGHT
    return {i: final / scale + weight * cosine_of.get(i, floor) for i, final in final_of.items()}


def with_dense_slots(picked: Picked, dense_ids: list[str], top_k: int) -> tuple[Picked, list[str]]:
    """(the page with the dense arm's best missing hits in its last slots, the ids added)."""
    slots = dense_slot_count(top_k)
    if slots <= 0:
        return picked, []
    on_page = {i for i, _ in picked}
    added = [i for i in dense_ids if i not in on_page][:slots]
    if not added:
        return picked, []
    keep = max(0, min(len(picked), top_k - len(added)))
    page = picked[:keep] + [(i, dict(DENSE_SLOT_MMR)) for i in added]
    return page, added
