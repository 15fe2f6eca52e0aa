"""Reciprocal-rank fusion: fused(d) = sum over arms of weight(arm) / (RRF_K + rank_arm(d)).

An arm is just a name and a ranked hit list, so a vector arm joins by adding one more entry.
"""
from __future__ import annotations

from . import tuning as T
from .arms import Hit


def fuse(arms: dict[str, list[Hit]]) -> dict[str, dict]:
    """id -> {"fused": score, "arms": {arm: {"rank", "score", **detail, "rrf"}}}."""
    fused: dict[str, dict] = {}
    for arm, hits in arms.items():
        weight = T.ARM_WEIGHTS.get(arm, 1.0)
        for rank, hit in enumerate(hits, start=1):
            contribution = weight / (T.RRF_K + rank)
            slot = fused.setdefault(hit.id, {"fused": 0.0, "arms": {}})
            slot["fused"] += contribution
            slot["arms"][arm] = {"rank": rank, "score": hit.score, **hit.detail,
                                 "rrf": contribution}
    return fused
