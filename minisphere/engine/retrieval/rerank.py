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
  superseded = 0.5 if a live entry replaces it (`supersedes`), less when needed to rank it just
               below that entry (retrieval/superseded.py), else 1
  subject    = 1 + SUBJECT_BOOST_MAX if the entry's first word is a word of the query, else 1
  name       = NAME_MISSING_FACTOR if the query searches for names (capitalised words past its
               first) and the entry (read up to RERANK_PREFIX_CHARS) contains none of them, else 1
  brevity    = 1 - lexical × (1 - min(1, chars / BREVITY_FULL_CHARS) ^ BREVITY_EXPONENT)
               -> in (0, 1]; chars = the entry's length (read up to RERANK_PREFIX_CHARS),
               lexical = the lexical arms' share of the fused score (1 without a binding); 1
               when off (0), when the query has no searchable words (no match to discount),
               and for an entry whose kind is not in BREVITY_KINDS (a fact)

A fresh entry with importance 0 that was never recalled, at least BREVITY_FULL_CHARS long, gets
×1 from every factor: it ranks by relevance alone.

MMR then picks topK from the best topK × 3: at each step the candidate maximising
  λ × relevance - (1 - λ) × max similarity to the already picked ones   (λ = 0.7)
where relevance is the final score min-max scaled over the pool to [0, 1] and similarity is the
Jaccard overlap of word-pair shingles (single words for texts under two terms) of the first
MMR_TEXT_CHARS characters, counted above MMR_SIMILARITY_FLOOR only and rescaled to [0, 1].
Shingles make the penalty bite on near-duplicates and restatements, not on entries that merely
share a topic.
"""

from __future__ import annotations

import heapq
import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, cast

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.query_text import content_terms, first_term, fold, plain_terms
from minisphere.wire.recall_answer import MmrDetail, RerankFactors

if TYPE_CHECKING:  # pragma: no cover - types only
    from minisphere.engine.retrieval.arms import RerankRow
    from minisphere.engine.retrieval.fusion import Slot

TAG_STEMS_CACHED = 4096  # distinct tags whose stems are kept (each a few words)
Shingles = frozenset[str | tuple[str, str]]  # single words, or word pairs


def decay_factor(volatility: str, age_ms: int) -> float:
    floor = T.DECAY_FLOOR[volatility]
    half_life = T.HALF_LIFE_MS[volatility]
    factor: float = floor + (1.0 - floor) * 0.5 ** (max(age_ms, 0) / half_life)
    return factor


def recall_factor(recall_count: int) -> float:
    return 1.0 + T.RECALL_BOOST_MAX * min(1.0, math.log1p(max(recall_count, 0)))


def importance_factor(importance: float) -> float:
    return 1.0 + T.IMPORTANCE_BOOST_MAX * min(max(importance, 0.0), 1.0)


@lru_cache(maxsize=TAG_STEMS_CACHED)
def tag_stems(tag: str) -> frozenset[str]:
    """The stems of one tag: the same few tags come back on most entries of every recall, so
    each is stemmed once per process."""
    return frozenset(content_terms(tag))


def tag_overlap_factor(query_stems: set[str], tags: list[str]) -> tuple[float, float]:
    if not query_stems or not tags:
        return 1.0, 0.0
    stems = tag_stems(tags[0]) if len(tags) == 1 else frozenset().union(*map(tag_stems, tags))
    share = len(query_stems & stems) / len(query_stems)
    return 1.0 + T.TAG_OVERLAP_BOOST_MAX * share, share


@dataclass(frozen=True)
class Focus:
    """What the query is about, as the rerank reads it: `subjects`, stems of its words too
    common to search (a speaker it names; the subject factor); `names`, the names it searches
    for (the name factor), found in an entry by one pattern over its folded prefix."""

    subjects: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()
    named: re.Pattern[str] | None = field(init=False, default=None, compare=False)

    def __post_init__(self) -> None:
        if self.names:  # a name as a whole token: no token character either side
            words = "|".join(re.escape(n) for n in sorted(self.names))
            object.__setattr__(self, "named", re.compile(rf"(?<![^\W_])(?:{words})(?![^\W_])"))


def name_factor(focus: Focus, row: RerankRow) -> float:
    """NAME_MISSING_FACTOR when the query searches for names and the entry holds none of them
    (most queries name none: then no entry is read)."""
    if focus.named is None:
        return 1.0
    text = fold(row.get("prefix", ""))
    # a substring test first: most entries hold no name of the query, and it costs a tenth
    # of the whole-token pattern, which then only confirms
    if any(name in text for name in focus.names) and focus.named.search(text):
        return 1.0
    return T.NAME_MISSING_FACTOR


def subject_factor(subject_stems: frozenset[str], row: RerankRow) -> float:
    """1 + SUBJECT_BOOST_MAX if the entry's first word is one of the query's dropped common
    words (most queries have none: then no entry's first word is read)."""
    if not subject_stems or first_term(row.get("prefix", "")) not in subject_stems:
        return 1.0
    return 1.0 + T.SUBJECT_BOOST_MAX


def brevity_factor(row: RerankRow, query_stems: set[str], lexical_part: float = 1.0) -> float:
    """Below BREVITY_FULL_CHARS an episode's word match counts for less: a short turn (a
    greeting, a one-line reply) matches the query's words by the few it has, not by what it
    says. A fact (`semantic`) is short by design and keeps its match. It discounts the lexical
    part of the fused score only (`lexical_part`, its share of it): a cosine already weighs the
    whole entry. Without searchable words there is no match to discount (browsing a period or
    a tag by recency)."""
    full = T.BREVITY_FULL_CHARS
    chars = len(row.get("prefix", ""))
    if full <= 0 or chars >= full or not query_stems or lexical_part <= 0:
        return 1.0
    if row["kind"] not in T.BREVITY_KINDS:
        return 1.0
    discount: float = (max(chars, 1) / full) ** T.BREVITY_EXPONENT
    return 1.0 - min(lexical_part, 1.0) * (1.0 - discount)


def lexical_part(slot: Slot) -> float:
    """The share of a fused score (fusion's slot) that the lexical arms gave: 1 without a vector
    arm, 1 - the vector arm's share with one."""
    vector = slot["arms"].get("vector")
    if vector is None or slot["fused"] <= 0:
        return 1.0
    share: float = max(0.0, 1.0 - vector["rrf"] / slot["fused"])
    return share


def rerank_factors(
    row: RerankRow,
    now_ms: int,
    query_stems: set[str],
    focus: Focus = Focus(),
    lexical: float = 1.0,
    superseded: float = 1.0,
) -> RerankFactors:
    tag_factor, tag_share = tag_overlap_factor(query_stems, row["tags"])
    factors: dict[str, float] = {
        "decay": decay_factor(row["volatility"], now_ms - row["updatedAt"]),
        "recall": recall_factor(row["recallCount"]),
        "importance": importance_factor(row["importance"]),
        "tagOverlap": tag_factor,
        "rolledUp": T.ROLLED_UP_FACTOR if "rolled-up" in row["tags"] else 1.0,
        "subject": subject_factor(focus.subjects, row),
        "name": name_factor(focus, row),
        "brevity": brevity_factor(row, query_stems, lexical),
        "superseded": superseded,
    }
    # the factors' keys are RerankFactors' own, which mypy cannot see through a dict[str, float]
    return cast(
        "RerankFactors",
        {**factors, "tagShare": tag_share, "product": math.prod(factors.values())},
    )


def rerank_product(
    row: RerankRow,
    now_ms: int,
    query_stems: set[str],
    focus: Focus = Focus(),
    lexical: float = 1.0,
    superseded: float = 1.0,
) -> float:
    """rerank_factors(...)["product"], without building the breakdown (run on every candidate;
    the breakdown is built for the returned ones only)."""
    volatility = row["volatility"]
    floor = T.DECAY_FLOOR[volatility]
    product: float = floor + (1.0 - floor) * 0.5 ** (
        max(now_ms - row["updatedAt"], 0) / T.HALF_LIFE_MS[volatility]
    )
    if row["recallCount"] > 0:
        product *= recall_factor(row["recallCount"])
    if row["importance"] > 0:
        product *= importance_factor(row["importance"])
    tags = row["tags"]
    if tags:
        product *= tag_overlap_factor(query_stems, tags)[0]
        if "rolled-up" in tags:
            product *= T.ROLLED_UP_FACTOR
    return (
        product
        * subject_factor(focus.subjects, row)
        * name_factor(focus, row)
        * brevity_factor(row, query_stems, lexical)
        * superseded
    )


def shingles(text: str) -> Shingles:
    """Word pairs of the text's first MMR_TEXT_CHARS (unstemmed: near-copies share the words
    themselves, and stemming a long prefix would cost more than the whole rest of MMR)."""
    terms = plain_terms(text[: T.MMR_TEXT_CHARS])
    if len(terms) < 2:
        return frozenset(terms)
    return frozenset(itertools.pairwise(terms))


def jaccard(a: Shingles, b: Shingles) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def similarity(a: Shingles, b: Shingles) -> float:
    """Jaccard overlap, counted only above MMR_SIMILARITY_FLOOR and rescaled to [0, 1]."""
    floor = T.MMR_SIMILARITY_FLOOR
    if not a or not b:
        return 0.0
    small, large = (len(a), len(b)) if len(a) <= len(b) else (len(b), len(a))
    if small <= floor * large:  # Jaccard ≤ |smaller| / |larger|: cannot pass the floor
        return 0.0
    overlap = jaccard(a, b)
    return 0.0 if overlap <= floor else (overlap - floor) / (1.0 - floor)


# Lazy greedy, with the same picks as comparing every candidate with every pick: a candidate's
# similarity to the picks only grows as picks are added, so its value computed against the picks
# it was compared with so far is an upper bound. The best bound is brought up to date (compared
# with the newer picks) and taken only if it is still the best; candidates that relevance alone
# keeps out of reach are never compared, nor their shingles computed.
def mmr(
    candidates: list[tuple[str, float]],
    texts: dict[str, str] | Callable[[list[str]], dict[str, str]],
    top_k: int,
    lam: float | None = None,
) -> list[tuple[str, MmrDetail]]:
    """candidates: (id, score) best first. Returns (id, {relevance, maxSimilarity, mmr}).
    texts: id -> text, or a function reading the texts of a list of ids (called lazily, a
    page at a time, only for candidates MMR has to compare)."""
    lam = T.MMR_LAMBDA if lam is None else lam  # read per call: the benchmark varies it
    pool = candidates[: top_k * T.MMR_POOL_FACTOR]
    if not pool:
        return []
    high, low = pool[0][1], min(score for _, score in pool)
    spread = high - low
    relevance = [(s - low) / spread if spread > 0 else 1.0 for _, s in pool]
    sets: dict[int, Shingles] = {}
    read: dict[str, str] = texts if isinstance(texts, dict) else {}

    def shingles_of(index: int) -> Shingles:
        if index not in sets:
            entry_id = pool[index][0]
            if entry_id not in read and not isinstance(texts, dict):
                page = [i for i, _ in pool[: index + 2 * top_k] if i not in read]
                read.update(texts(page))
            sets[index] = shingles(read.get(entry_id, ""))
        return sets[index]

    keep = 1 - lam
    closest = [0.0] * len(pool)  # max similarity to the picks compared so far
    compared = [0] * len(pool)  # how many picks that covers
    bounds = [(-lam * relevance[i], i) for i in range(len(pool))]  # (-value, pool order)
    heapq.heapify(bounds)
    picks: list[int] = []
    chosen: list[tuple[str, MmrDetail]] = []
    while bounds and len(chosen) < top_k:
        _, index = heapq.heappop(bounds)
        if compared[index] < len(picks):
            mine = shingles_of(index)
            for pick in picks[compared[index] :]:
                if closest[index] < 1.0:
                    closest[index] = max(closest[index], similarity(mine, shingles_of(pick)))
            compared[index] = len(picks)
            heapq.heappush(bounds, (-(lam * relevance[index] - keep * closest[index]), index))
            continue
        value = lam * relevance[index] - keep * closest[index]
        picks.append(index)
        chosen.append(
            (
                pool[index][0],
                {"relevance": relevance[index], "maxSimilarity": closest[index], "mmr": value},
            )
        )
    return chosen
