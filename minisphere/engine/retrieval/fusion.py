"""Fusion: from the arms' hit lists to one score per candidate.

Lexical evidence (zero bindings), per candidate d:

    lexical(d) = keyword(d) / best keyword score + GRAPH_FUSION_WEIGHT × graph support(d)
                 + TAG_SUPPORT_WEIGHT × tag(d)

tag(d) (tag_support.py) is how much of the query's keyword matches sit under d's tag,
relative to the tag holding most: it reorders the candidates, adds none.

The keyword arm is scaled so its best hit is 1; the graph arm's support is already relative to
the best seed (arms.graph_arm). A neighbour of the best hit over a `follows` edge of weight 0.5
gets 0.5 (GRAPH_FUSION_WEIGHT undoes the 0.6 hop decay of the first hop), so the turn that
answers the matching question can enter the first page, which reciprocal-rank fusion does not
allow: there an entry found by the graph alone at graph rank 1 scores 1/61, below every entry
found by both arms down to rank 60.

With a vector binding (hybrid), a convex combination of the lexical score and the cosine:

    fused(d) = a × lexical(d) / best lexical + (1 - a) × cosine'(d)

where `a`, the lexical share, is set per query by how sharply the lexical head stands out:

    margin = 1 - lexical(10th) / lexical(1st)            (1 with fewer than 10 candidates)
    a      = clip(HYBRID_LEXICAL_SLOPE × (margin - HYBRID_LEXICAL_MARGIN_FLOOR), 0, HYBRID_LEXICAL_MAX)

A flat lexical head (many entries matching the query words about equally: common words, long
natural-language questions) has no say and the dense arm ranks alone; a peaked one (rare
words, short entries) leads. cosine'(d) is the cosine to the query vector after one round of
feedback (the vector arm's `refine`: the query moved towards the mean vector of the first
fused page), computed exactly for every candidate of either arm. Cosines are used raw, not
stretched per query: on short conversational turns every cosine sits in a narrow band, so the
dense arm's say shrinks by itself where it tells entries apart least.

The arms' agreement then bounds the dense arm's say from below (the margin rule alone does
not carry over from the dev conversations to unseen ones):

    support = mean over the vector arm's HYBRID_AGREEMENT_DEPTH best hits of lexical(d) / best
    a       = max(a, agreement_floor(support, dense margin))
              1 at or below HYBRID_AGREEMENT_LOW, 0 from HIGH, linear between -- but 1 there
              too while the dense head does not stand out from its own arm (dense margin =
              1 - 20th best cosine / best, below HYBRID_DENSE_MARGIN_TRUSTED)

A query that names a subject the workspace is full of (a word too common to search, dropped
by distillation: a conversation's speaker) is left in lexical order whatever the agreement
(HYBRID_SUBJECT_LEXICAL_LED): the subject factor (rerank.py) puts that subject's own entries
first, which the cosine cannot do (see tuning.py).

A dense head the lexical arm does not back at all is off the query's topic (on conversations
it mostly is: chit-chat turns close to any question), and the lexical order is left alone, the
vector feedback round skipped. On passages the dense head is mostly backed (support runs far
higher there than on conversations) and the margin rule above decides.

Where the lexical share ends at 1, the dense arm still has a bounded say after rerank: the
cosine re-scores the MMR pool (dense_page.py; its best missing hits could also take the page's
last slots, a move that is off); the lexical head stays first.

Guarantees (tests/engine/retrieval/test_fusion_rerank.py): an empty or flat lexical arm leaves
the dense order untouched; an empty vector arm, one giving every candidate the same cosine, or
one whose head the lexical arm does not back, leaves the lexical order untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.arms import Hit

FLAT_COSINE_SPREAD = 1e-9  # cosines of the vector arm's hits closer than this are all equal
Slot = dict[str, Any]  # {"fused": float, "arms": {arm: {"rank", "score", **detail, "rrf": share}}}


def _slots(arms: dict[str, list[Hit]]) -> dict[str, Slot]:
    slots: dict[str, Slot] = {}
    for arm, hits in arms.items():
        for rank, hit in enumerate(hits, start=1):
            slot = slots.setdefault(hit.id, {"fused": 0.0, "arms": {}})
            slot["arms"][arm] = {"rank": rank, "score": hit.score, **hit.detail, "rrf": 0.0}
    return slots


def lexical_scores(
    keyword: list[Hit], graph: list[Hit], tag: list[Hit] | None = None
) -> dict[str, dict[str, float]]:
    """id -> {"keyword": share, "graph": share, "tag": share}: the terms of lexical(d)."""
    best = keyword[0].score if keyword and keyword[0].score > 0 else 1.0
    shares: dict[str, dict[str, float]] = {}
    for hit in keyword:
        shares.setdefault(hit.id, {})["keyword"] = max(hit.score, 0.0) / best
    for hit in graph:
        shares.setdefault(hit.id, {})["graph"] = T.GRAPH_FUSION_WEIGHT * hit.score
    for hit in tag or ():
        shares.setdefault(hit.id, {})["tag"] = T.TAG_SUPPORT_WEIGHT * hit.score
    return shares


def lexical_margin(totals: list[float]) -> float:
    """1 - (depth-th best) / best: how sharply the head stands out (0 flat .. 1 peaked)."""
    ordered = sorted(totals, reverse=True)
    if not ordered or ordered[0] <= 0:
        return 0.0
    if len(ordered) < T.HYBRID_MARGIN_DEPTH:
        return 1.0
    return 1.0 - ordered[T.HYBRID_MARGIN_DEPTH - 1] / ordered[0]


def lexical_share(margin: float) -> float:
    raw = T.HYBRID_LEXICAL_SLOPE * (margin - T.HYBRID_LEXICAL_MARGIN_FLOOR)
    return min(T.HYBRID_LEXICAL_MAX, max(0.0, raw))


def dense_head_support(lexical: dict[str, float], cosines: dict[str, float]) -> float:
    """How far the lexical arm backs the vector arm's head: the mean, over the vector arm's
    HYBRID_AGREEMENT_DEPTH best hits, of lexical(d) / best lexical (0 where the lexical arm did
    not find d). The arms' own agreement, measured per query."""
    best = max(lexical.values(), default=0.0)
    if best <= 0 or not cosines:
        return 0.0
    head = sorted(cosines, key=lambda i: -cosines[i])[: T.HYBRID_AGREEMENT_DEPTH]
    return sum(lexical.get(i, 0.0) for i in head) / (best * len(head))


def dense_margin(cosines: dict[str, float]) -> float:
    """1 - (HYBRID_AGREEMENT_DEPTH-th best cosine) / best: how sharply the dense head stands out
    from the rest of its own arm (0 flat .. 1 peaked; 0 when the best cosine is not positive)."""
    ordered = sorted(cosines.values(), reverse=True)[: T.HYBRID_AGREEMENT_DEPTH]
    if not ordered or ordered[0] <= 0:
        return 0.0
    return 1.0 - max(ordered[-1], 0.0) / ordered[0]


def agreement_floor(support: float, head_margin: float) -> float:
    """The least lexical share a query gets for how little the lexical arm backs the dense head:
    1 (the lexical order left alone) at or below HYBRID_AGREEMENT_LOW, 0 (no floor) from
    HYBRID_AGREEMENT_HIGH, linear between -- except that between the two a dense head that does
    not stand out from its own arm (`head_margin`, dense_margin, below
    HYBRID_DENSE_MARGIN_TRUSTED) is not trusted either: the floor stays 1."""
    low, high = T.HYBRID_AGREEMENT_LOW, T.HYBRID_AGREEMENT_HIGH
    if support <= low:
        return 1.0
    if support >= high:
        return 0.0
    if head_margin < T.HYBRID_DENSE_MARGIN_TRUSTED:
        return 1.0
    return (high - support) / (high - low)


def fuse(arms: dict[str, list[Hit]]) -> dict[str, Slot]:
    """Zero-binding fusion: the lexical score, or the recency list's reciprocal rank."""
    slots = _slots(arms)
    for entry_id, shares in lexical_scores(
        arms.get("keyword", []), arms.get("graph", []), arms.get("tag")
    ).items():
        slot = slots[entry_id]
        for arm, share in shares.items():
            slot["arms"][arm]["rrf"] = share
        slot["fused"] = sum(shares.values())
    for rank, hit in enumerate(arms.get("recency", []), start=1):
        share = 1.0 / (T.RRF_K + rank)
        slots[hit.id]["arms"]["recency"]["rrf"] = share
        slots[hit.id]["fused"] += share
    return slots


Refine = Callable[[list[str]], list[Hit]]


def fuse_hybrid(
    arms: dict[str, list[Hit]],
    refine: Refine,
    info: dict[str, Any] | None = None,
    names_subject: bool = False,
) -> dict[str, Slot]:
    """Hybrid fusion over the keyword, graph and vector arms (cosine hits, best first).

    `refine(head ids)` runs the vector arm again with the query moved towards the head's
    vectors and returns its hits. In the breakdown, the vector arm's `cosine` is what the first
    round used, `score` and `rank` what the final one used (an entry the vector arm did not
    return in a round gets that round's lowest cosine), and every arm's `rrf` is its share of
    `fused`, so the shares add up to it. Slots come best first, ties in lexical order.
    `info`, if given, receives the lexical share the query got ("lexicalShare") and what it was
    judged by ("support", "lexicalMargin", "denseMargin", "subjectLed"). `names_subject`: the
    query names a word too common in this workspace to search (query_text.subject_terms); with
    HYBRID_SUBJECT_LEXICAL_LED the lexical order is then kept.
    """
    if not arms.get("vector"):  # no vector evidence at all: the lexical ranking as it is
        return fuse({k: v for k, v in arms.items() if k != "vector"})
    shares = lexical_scores(arms.get("keyword", []), arms.get("graph", []), arms.get("tag"))
    lexical = {entry_id: sum(s.values()) for entry_id, s in shares.items()}
    best = max(lexical.values(), default=0.0)
    margin = lexical_margin(list(lexical.values())) if best > 0 else 0.0
    subject_led = names_subject and T.HYBRID_SUBJECT_LEXICAL_LED
    plain = {h.id: h.score for h in arms["vector"]}
    a, support, head_margin = _judged_share(
        lexical_share(margin), best, margin, lexical, plain, subject_led
    )
    if info is not None:
        info.update(
            lexicalShare=a,
            lexicalMargin=margin,
            support=support,
            denseMargin=head_margin,
            subjectLed=subject_led and a >= 1.0,
        )
    blend = _Blend(lexical, best, a, set(plain))
    candidates = list(dict.fromkeys([*lexical, *plain]))
    first_cos = _cosines_used(plain, candidates)
    final_cos = first_cos  # without a feedback round, the first round's cosines stand
    # with no say for the dense arm its feedback round could not change the order: skip the KNN
    # (and the first round's order it would start from)
    if a < 1.0:
        head = blend.ranked(blend.combine(first_cos))[: T.VECTOR_FEEDBACK_DOCS]
        refined_hits = refine(head)
        if refined_hits:
            refined = {h.id: h.score for h in refined_hits}
            blend.returned = set(refined)
            candidates = list(dict.fromkeys([*candidates, *refined]))
            final_cos = _cosines_used(refined, candidates)
    return _hybrid_slots(arms, shares, blend, first_cos, final_cos)


def _hybrid_slots(
    arms: dict[str, list[Hit]],
    shares: dict[str, dict[str, float]],
    blend: _Blend,
    first_cos: dict[str, float],
    final_cos: dict[str, float],
) -> dict[str, Slot]:
    """The fused slots, best first: every arm's `rrf` its share of `fused`; the vector arm's
    `cosine` the first round's (its lowest for an entry it did not return), `score` and `rank`
    the final round's."""
    a, best = blend.a, blend.best
    first_floor = min(first_cos.values())
    fused = blend.combine(final_cos)
    rank_of = {i: r for r, i in enumerate(blend.ranked(final_cos), start=1)}
    slots = _slots(arms)
    out: dict[str, Slot] = {}
    for entry_id in blend.ranked(fused):
        slot = slots.setdefault(entry_id, {"fused": 0.0, "arms": {}})
        slot["fused"] = fused[entry_id]
        for arm, share in shares.get(entry_id, {}).items():
            slot["arms"][arm]["rrf"] = a * share / best
        slot["arms"]["vector"] = {
            "rank": rank_of[entry_id],
            "score": final_cos[entry_id],
            "cosine": first_cos.get(entry_id, first_floor),
            "rrf": (1 - a) * final_cos[entry_id],
        }
        out[entry_id] = slot
    return out


def _cosines_used(cos: dict[str, float], candidates: list[str]) -> dict[str, float]:
    """Each candidate's cosine in a round; one the vector arm did not return gets the lowest."""
    floor = min(cos.values())
    return {i: cos.get(i, floor) for i in candidates}


@dataclass
class _Blend:
    """The lexical arms' scores blended with cosines at lexical share `a`; `returned`: what
    the vector arm returned in the current round (an imputed cosine ranks after it)."""

    lexical: dict[str, float]
    best: float
    a: float
    returned: set[str]

    def combine(self, cos: dict[str, float]) -> dict[str, float]:
        a, best, lexical = self.a, self.best, self.lexical
        return {
            i: (a * lexical.get(i, 0.0) / best if best > 0 else 0.0) + (1 - a) * c
            for i, c in cos.items()
        }

    def ranked(self, scores: dict[str, float]) -> list[str]:
        # ties (an imputed cosine ties the lowest returned one): the arm that has a say first
        lexical, returned = self.lexical, self.returned
        if self.a > 0:
            return sorted(
                scores, key=lambda i: (-scores[i], -lexical.get(i, 0.0), i not in returned)
            )
        return sorted(scores, key=lambda i: (-scores[i], i not in returned, -lexical.get(i, 0.0)))


def _judged_share(
    a: float,
    best: float,
    margin: float,
    lexical: dict[str, float],
    plain: dict[str, float],
    subject_led: bool,
) -> tuple[float, float, float]:
    """The lexical share `a` once the vector arm's head is judged; with what it was judged by
    (the lexical arm's support of that head, and the head's own margin)."""
    support, head_margin = dense_head_support(lexical, plain), dense_margin(plain)
    if best > 0 and max(plain.values()) - min(plain.values()) <= FLAT_COSINE_SPREAD:
        a = 1.0  # every entry equally close to the query: the vector arm tells nothing apart
    elif margin > 0 and subject_led:
        a = 1.0  # the subject factor ranks the named subject's entries; the cosine cannot
    elif margin > 0:  # a dense head the lexical arm does not back is off the query's topic
        # (a lexical head with no spread at all tells nothing apart: there the dense order stands)
        a = max(a, agreement_floor(support, head_margin))
    return a, support, head_margin
