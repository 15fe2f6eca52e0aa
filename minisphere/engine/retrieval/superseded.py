"""Recall and supersession: a replaced entry ranks below what replaced it.

Three steps, each named in the score breakdown's `superseded` factor:
  1. an entry that a live entry replaces (engine/supersession.py) is scored × SUPERSEDED_FACTOR,
     inside the rerank, so the pool is chosen with it;
  2. when a live replacement is among the candidates too, the replaced entry's score is held
     just under it (× SUPERSEDED_BELOW_SHARE of the replacement's), however much better its
     words match;
  3. MMR may still pick the older one first (the newer one looks like it): the page is then
     reordered, stably, so that every replacement comes before what it replaced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.supersession import Supersession

if TYPE_CHECKING:  # pragma: no cover - types only
    from minisphere.engine.retrieval.arms import RerankRow

Scored = tuple[str, float, "RerankRow"]
Detail = TypeVar("Detail")


def superseded_factor(found: Supersession, entry_id: str) -> float:
    """Step 1: the factor of an entry before any replacement's score is known."""
    if entry_id not in found.newer:  # most candidates: nothing replaces them
        return 1.0
    return T.SUPERSEDED_FACTOR if found.head(entry_id) is not None else 1.0


def hold_below_successors(
    scored: list[Scored], found: Supersession, factors: dict[str, float]
) -> list[Scored]:
    """Step 2, over candidates already scored with step 1: each replaced entry's score is held
    under its scored replacements'; `factors` receives each replaced entry's whole factor
    (steps 1 and 2). The candidates come back best first."""
    final = {entry_id: score for entry_id, score, _ in scored}
    replacing = {i: found.replacements(i) for i in final if i in found.newer}
    replacing = {i: above for i, above in replacing.items() if above}
    # a replacement's own replacements are fewer than those of what it replaced: settled first
    for entry_id in sorted(replacing, key=lambda i: len(replacing[i])):
        above = [final[s] for s in replacing[entry_id] if s in final]
        before = final[entry_id]
        if above and before >= min(above) * T.SUPERSEDED_BELOW_SHARE:
            final[entry_id] = min(above) * T.SUPERSEDED_BELOW_SHARE
        held = final[entry_id] / before if before > 0 else 1.0
        factors[entry_id] = T.SUPERSEDED_FACTOR * held
    out = [(entry_id, final[entry_id], row) for entry_id, _, row in scored]
    out.sort(key=lambda s: -s[1])
    return out


def successors_first(
    picked: list[tuple[str, Detail]], found: Supersession
) -> list[tuple[str, Detail]]:
    """Step 3: the page in its order, except that no entry comes before a live replacement of
    it that is also on the page (at each place, the first remaining entry none of whose
    remaining replacements is still waiting)."""
    replacing = {i: found.replacements(i) for i, _ in picked if i in found.newer}
    if not any(replacing.values()):
        return picked
    waiting = list(picked)
    ordered: list[tuple[str, Detail]] = []
    while waiting:
        ids = {entry_id for entry_id, _ in waiting}
        index = next(
            (
                n
                for n, (entry_id, _) in enumerate(waiting)
                if not (replacing.get(entry_id, frozenset()) & ids)
            ),
            0,
        )
        ordered.append(waiting.pop(index))
    return ordered
