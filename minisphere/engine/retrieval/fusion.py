"""Reciprocal-rank fusion: fused(d) = sum over arms of weight(arm) / (RRF_K + rank_arm(d)).

An arm is just a name and a ranked hit list, so a vector arm joins by adding one more entry.
"""
from __future__ import annotations

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.arms import Hit


def fuse(arms: dict[str, list[Hit]], weights: dict[str, float] | None = None) -> dict[str, dict]:
    """id -> {"fused": score, "arms": {arm: {"rank", "score", **detail, "rrf"}}}.

    weights: ARM_WEIGHTS by default; recall passes HYBRID_ARM_WEIGHTS when the vector arm ran."""
    fused: dict[str, dict] = {}
    weights = T.ARM_WEIGHTS if weights is None else weights
    for arm, hits in arms.items():
        weight = weights.get(arm, 1.0)
        for rank, hit in enumerate(hits, start=1):
            contribution = weight / (T.RRF_K + rank)
            slot = fused.setdefault(hit.id, {"fused": 0.0, "arms": {}})
            slot["fused"] += contribution
            slot["arms"][arm] = {"rank": rank, "score": hit.score, **hit.detail,
                                 "rrf": contribution}
    return fused
