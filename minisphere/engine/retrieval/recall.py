"""recall(): the contract's §5 pipeline, end to end, with a score breakdown per item.

1 temporal rewrite + rare-term distillation -> 2 prefilters (SQL) -> 3 keyword arm (FTS5 bm25)
-> 4 graph arm (BFS from keyword seeds) -> 5 fusion (lexical score; with a vector binding, a
convex mix with the cosine whose lexical share follows the lexical head's margin) -> 6 rerank
factors + MMR
-> 7 snippet budget -> 8 always-on filters (inside the prefilter SQL).
Nothing is cached: every call recomputes every score. recall itself only reads (it can run on a
read-only connection); the returned entries' recall_count + 1 is the follow-up write
`note_recalled`, which never touches updated_at (using a fact is not confirming it).
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

from minisphere.engine.arguments import NoteRecalledArgs, RecallArgs
from minisphere.engine.as_of import read_as_of
from minisphere.engine.clock import iso_utc
from minisphere.engine.db import Connection
from minisphere.engine.reads import entry_count
from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.arms import (
    RERANK_COLUMNS,
    TAG_SEPARATOR,
    Hit,
    RerankRow,
    graph_arm,
    keyword_arm,
    recency_arm,
    rerank_row,
)
from minisphere.engine.retrieval.dense_page import cosine_keys
from minisphere.engine.retrieval.fusion import Slot, fuse, fuse_hybrid
from minisphere.engine.retrieval.query_text import (
    STOP_WORDS,
    distill,
    folded_names,
    query_names,
    stem,
    subject_terms,
    tokenize,
)
from minisphere.engine.retrieval.rerank import (
    Focus,
    lexical_part,
    mmr,
    rerank_factors,
    rerank_product,
)
from minisphere.engine.retrieval.respell import stand_ins
from minisphere.engine.retrieval.snippets import apply_budget
from minisphere.engine.retrieval.sql_filters import Prefilter
from minisphere.engine.retrieval.superseded import (
    hold_below_successors,
    successors_first,
    superseded_factor,
)
from minisphere.engine.retrieval.tag_support import tag_arm
from minisphere.engine.retrieval.temporal import TimeBounds, extract_time_bounds
from minisphere.engine.retrieval.vector_arm import AnyVectorArm, VectorArm
from minisphere.engine.rows import ENTRY_COLUMNS, entries_by_id, entry_dict
from minisphere.engine.staleness import revalidate_prompt
from minisphere.engine.supersession import Supersession, any_replaced, read_supersession
from minisphere.errors import InvalidArgument
from minisphere.wire.answers import Entry, NotedAnswer
from minisphere.wire.recall_answer import (
    Breakdown,
    FusionState,
    MmrDetail,
    QueryUsed,
    RecallAnswer,
    RecallItem,
)

Scored = tuple[str, float, RerankRow]  # (id, final score, rerank row): a reranked candidate


class _Timer:
    """Milliseconds per stage. `lap(name)` books the time since the previous lap to `name`;
    time spent inside `part(name)` is booked to `name` instead of the lap it falls in (both
    feedback rounds run inside other stages: the keyword arm's and the fusion's)."""

    def __init__(self) -> None:
        self.marks: dict[str, float] = {}
        self._last = time.perf_counter()
        self._parted = 0.0  # seconds of the current lap already booked to a part

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.marks[name] = round((now - self._last - self._parted) * 1000, 3)
        self._last, self._parted = now, 0.0

    @contextlib.contextmanager
    def part(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            spent = time.perf_counter() - started
            self._parted += spent
            self.marks[name] = round(self.marks.get(name, 0.0) + spent * 1000, 3)


def _iso_or_none(ms: int | None) -> str | None:
    return None if ms is None else iso_utc(ms)


def _rerank_rows(conn: Connection, ids: list[str]) -> dict[str, RerankRow]:
    """What the rerank factors read, for candidates no arm read: no content (it can be 64 KiB)."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {
        r[0]: rerank_row(r[1:])
        for r in conn.execute(
            f"SELECT e.id, {RERANK_COLUMNS} FROM entries e WHERE e.id IN ({marks})", ids
        ).fetchall()
    }


def max_rerank_boost() -> float:
    """No rerank factor lifts a score by more than this (decay, rolledUp and brevity only
    lower it)."""
    return (
        (1 + T.RECALL_BOOST_MAX)
        * (1 + T.IMPORTANCE_BOOST_MAX)
        * (1 + T.TAG_OVERLAP_BOOST_MAX)
        * (1 + T.SUBJECT_BOOST_MAX)
    )


def _rerank(
    conn: Connection,
    fused: dict[str, Slot],
    known: dict[str, tuple[Any, ...]],
    now_ms: int,
    query_stems: set[str],
    focus: Focus,
    pool_size: int,
    found: Supersession | None,
) -> list[Scored]:
    """(id, final, rerank row), best first, for every candidate that can reach the MMR pool;
    with `found`, the supersession factor is applied and `found` receives the supersession of
    every candidate looked at.

    Candidates are taken in fused order; once the pool is full, one whose fused score times the
    largest possible boost cannot beat the pool's last is not looked at, nor is any after it
    (the same pool as reranking everything; the cost follows the pool, not the candidates).
    """
    order = sorted(fused, key=lambda i: -fused[i]["fused"])
    scored: list[Scored] = []
    finals: list[float] = []  # min-heap of the pool's finals
    boost = max_rerank_boost()
    for start in range(0, len(order), 2 * pool_size):
        chunk = order[start : start + 2 * pool_size]
        light = _rerank_rows(conn, [i for i in chunk if i not in known])
        light.update((i, rerank_row(known[i])) for i in chunk if i in known)
        if found is not None:
            read_supersession(conn, chunk, found)
        for entry_id in chunk:
            if len(finals) >= pool_size and fused[entry_id]["fused"] * boost < finals[0]:
                scored.sort(key=lambda s: -s[1])
                return scored
            if entry_id not in light:
                continue
            slot = fused[entry_id]
            final = slot["fused"] * rerank_product(
                light[entry_id],
                now_ms,
                query_stems,
                focus,
                lexical_part(slot),
                1.0 if found is None else superseded_factor(found, entry_id),
            )
            scored.append((entry_id, final, light[entry_id]))
            if len(finals) < pool_size:
                heapq.heappush(finals, final)
            elif final > finals[0]:
                heapq.heapreplace(finals, final)
    scored.sort(key=lambda s: -s[1])
    return scored


def _prefixes(conn: Connection, ids: list[str], chars: int) -> dict[str, str]:
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return dict(
        conn.execute(
            f"SELECT id, substr(content, 1, ?) FROM entries WHERE id IN ({marks})", [chars, *ids]
        ).fetchall()
    )


# the entry columns with the content cut to what the snippet budget can show (one past it, so a
# cut is still seen as one) and its whole length beside them
_SNIPPET_COLUMNS = ENTRY_COLUMNS.replace("content,", "substr(content, 1, ?),", 1)
assert _SNIPPET_COLUMNS != ENTRY_COLUMNS


def _hydrate(
    conn: Connection, ids: list[str], now_ms: int, full: bool
) -> dict[str, tuple[Entry, int]]:
    """The returned entries only, each with its whole content's length. Without `full`, content
    is read up to the snippet budget."""
    if not ids:
        return {}
    if full:
        return {
            i: (entry, len(entry["content"]))
            for i, entry in entries_by_id(conn, ids, now_ms).items()
        }
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT {_SNIPPET_COLUMNS}, length(content), (SELECT group_concat(t.tag, "
        f"'{TAG_SEPARATOR}') FROM tags t WHERE t.entry_id = entries.id) FROM entries "
        f"WHERE id IN ({marks})",
        [T.SNIPPET_TOP_CHARS + 1, *ids],
    ).fetchall()
    return {
        row[0]: (
            entry_dict(row, sorted(row[-1].split(TAG_SEPARATOR)) if row[-1] else [], now_ms),
            row[-2],
        )
        for row in rows
    }


def _lexical_led_pool(
    conn: Connection, scored: list[Scored], vector_arm: VectorArm, pool_size: int
) -> list[Scored]:
    """The MMR pool of a recall whose fusion left the lexical order alone, re-scored with the
    cosine (dense_page.cosine_keys): (id, key, rerank row), best first."""
    pool = scored[:pool_size]
    if T.HYBRID_PAGE_COSINE_WEIGHT <= 0 or len(pool) < 2:
        return pool
    keys = cosine_keys(
        {i: final for i, final, _ in pool}, vector_arm.cosines(conn, [i for i, _, _ in pool])
    )
    return sorted(((i, keys[i], row) for i, _, row in pool), key=lambda s: -s[1])


def _search_terms(
    conn: Connection,
    tokens: list[str],
    frequencies: dict[str, int],
    substitutes: dict[str, list[str]],
    folded: frozenset[str],
) -> tuple[list[str], list[str]]:
    """distill's (kept, dropped), with the stand-ins of words no entry contains searched beside
    them (respell.py; `substitutes` receives them)."""
    terms, dropped = (
        distill(conn, tokens, entry_count(conn), frequencies, folded) if tokens else ([], [])
    )
    if T.RESPELL_UNKNOWN_WORDS and terms:
        substitutes.update(stand_ins(conn, terms, frequencies))
        terms = list(dict.fromkeys([*terms, *(s for found in substitutes.values() for s in found)]))
    return terms, dropped


def _rewrite(
    conn: Connection,
    args: RecallArgs,
    now_ms: int,
    frequencies: dict[str, int],
    substitutes: dict[str, list[str]],
    folded: frozenset[str],
) -> tuple[str, TimeBounds, list[str], list[str]]:
    if not args.query.strip():
        raise InvalidArgument("recall: query must not be empty")
    text, bounds = extract_time_bounds(args.query, now_ms)
    tokens = tokenize(text)
    terms, dropped = _search_terms(conn, tokens, frequencies, substitutes, folded)
    only_stop_words = bool(terms) and all(t in STOP_WORDS for t in terms)
    if only_stop_words and bounds.active:  # "what happened yesterday?": browse the period
        terms, dropped = [], list(dict.fromkeys(tokens))
    return text, bounds, terms, dropped


def _tag_hits(conn: Connection, arms: dict[str, list[Hit]], prefilter: Prefilter) -> list[Hit]:
    """The tag arm over what the keyword and graph arms found (tag_support.py)."""
    keyword = arms.get("keyword", [])
    return tag_arm(conn, keyword, [h.id for h in [*keyword, *arms.get("graph", [])]], prefilter.tag)


@dataclass
class Gathered:
    """The query as recall read it, and the arms run on it."""

    arms: dict[str, list[Hit]]
    prefilter: Prefilter
    terms: list[str]
    dropped: list[str]  # query words too common to search
    text: str  # the query rewritten (time phrases out)
    bounds: TimeBounds
    relaxed: bool  # the time bounds were dropped: they matched nothing
    vector_arm: AnyVectorArm  # the vector arm that ran (None: none)
    substitutes: dict[str, list[str]]  # stand-ins searched for unknown words

    def query_used(
        self, args: RecallArgs, fusion_info: dict[str, Any], lexical_led: bool
    ) -> QueryUsed:
        bounds = self.bounds
        used: QueryUsed = {
            "original": args.query,
            "text": self.text,
            "terms": self.terms,
            "droppedTerms": self.dropped,
            "standIns": self.substitutes,
            "timePhrases": bounds.phrases,
            "since": bounds.since_ms,
            "until": bounds.until_ms,
            "sinceIso": _iso_or_none(bounds.since_ms),
            "untilIso": _iso_or_none(bounds.until_ms),
            "boundsRelaxed": self.relaxed,
            "filters": {"kind": args.kind, "tag": self.prefilter.tag},
            "arms": {name: len(hits) for name, hits in self.arms.items()},
        }
        if fusion_info:  # how the hybrid weighed its arms for this query (the vector arm ran)
            used["fusion"] = cast("FusionState", {**fusion_info, "lexicalLed": lexical_led})
        return used


def _gather_arms(
    conn: Connection, args: RecallArgs, now_ms: int, vector_arm: AnyVectorArm, timer: _Timer
) -> Gathered:
    """The query rewritten and every arm run.

    The vector arm is resolved last, after the lexical arms: a bound recall's query embedding
    started before this recall and runs beside rewrite, keyword and graph, so only what is left
    of it is waited for here (booked as `embedWaitMs`, not as the KNN's `vectorMs`)."""
    frequencies: dict[str, int] = {}  # document counts of the query words (distill's)
    substitutes: dict[str, list[str]] = {}
    folded = folded_names(args.query)  # searched by their letters, not in FTS5
    text, bounds, terms, dropped = _rewrite(conn, args, now_ms, frequencies, substitutes, folded)
    prefilter = Prefilter.build(args.kind, args.tag, bounds, now_ms)
    timer.lap("rewriteMs")
    relaxed = False
    arms: dict[str, list[Hit]] = {}
    if terms:
        feedback_watch = functools.partial(timer.part, "feedbackMs")
        keyword = keyword_arm(conn, terms, prefilter, frequencies, feedback_watch, folded)
        if not keyword and bounds.active:
            # A time phrase must not turn a good query into nothing: drop the bounds and search
            # the phrase's words too (in "the 1990 world cup", 1990 is a topic, not a filter).
            relaxed, prefilter = True, prefilter.without_time()
            tokens = tokenize(args.query)
            terms, dropped = _search_terms(conn, tokens, frequencies, substitutes, folded)
            keyword = keyword_arm(conn, terms, prefilter, frequencies, feedback_watch, folded)
        arms["keyword"] = keyword
        timer.lap("keywordMs")
        if args.hops > 0 and keyword:
            arms["graph"] = graph_arm(conn, keyword, args.hops, prefilter)
        timer.lap("graphMs")
        if tagged := _tag_hits(conn, arms, prefilter):
            arms["tag"] = tagged
        timer.lap("tagMs")
        if vector_arm is not None:  # optional binding: KNN over sqlite-vec (engine/vectors)
            with timer.part("embedWaitMs"):
                vector_arm = vector_arm.resolve()  # None: the embedding failed
            if vector_arm is not None:
                arms["vector"] = vector_arm.hits(conn, prefilter)
            timer.lap("vectorMs")
    elif bounds.active or prefilter.tag is not None:
        arms["recency"] = recency_arm(conn, prefilter)
        timer.lap("recencyMs")
    return Gathered(arms, prefilter, terms, dropped, text, bounds, relaxed, vector_arm, substitutes)


def _recall_item(
    hydrated: tuple[Entry, int],
    fused: Slot,
    arms: dict[str, list[Hit]],
    row: RerankRow,
    final: float,
    mmr_detail: MmrDetail,
    now_ms: int,
    query_stems: set[str],
    focus: Focus,
    superseded: tuple[float, str | None],
) -> RecallItem:
    """One answer item: the entry, its score and the breakdown of how it was reached (its
    content still whole; the snippet budget cuts it). `superseded`: the entry's supersession
    factor and its newest live replacement."""
    entry, whole_chars = hydrated
    entry["recallCount"] += 1
    arm_detail = fused["arms"]
    # full floats: rounding every number of the breakdown is a visible share of a cheap recall
    breakdown: Breakdown = {
        "keyword": arm_detail.get("keyword"),
        "graph": arm_detail.get("graph"),
        "recency": arm_detail.get("recency"),
        "tag": arm_detail.get("tag"),
        "fused": fused["fused"],
        "rerank": rerank_factors(
            row, now_ms, query_stems, focus, lexical_part(fused), superseded[0]
        ),
        "final": final,
        "mmr": mmr_detail,
    }
    if "vector" in arms:
        breakdown["vector"] = arm_detail.get("vector")
    return {
        **entry,
        "score": final,
        "supersededBy": superseded[1],
        "breakdown": breakdown,
        "contentChars": whole_chars,
        "truncated": False,
    }


def _fuse(
    conn: Connection,
    arms: dict[str, list[Hit]],
    vector_arm: AnyVectorArm,
    prefilter: Prefilter,
    timer: _Timer,
    subjects: frozenset[str],
) -> tuple[dict[str, Slot], dict[str, Any]]:
    """The arms fused, and how the hybrid weighed them (empty when the vector arm did not run;
    its feedback round is booked to `feedbackMs`)."""
    info: dict[str, Any] = {}
    if "vector" not in arms:
        return fuse(arms), info
    ran = cast(VectorArm, vector_arm)  # it ran, so it resolved to an arm

    def refine(head: list[str]) -> list[Hit]:
        with timer.part("feedbackMs"):
            return ran.refine(conn, prefilter, head)

    return fuse_hybrid(arms, refine, info, names_subject=bool(subjects)), info


def _page(
    conn: Connection,
    args: RecallArgs,
    gathered: Gathered,
    fused: dict[str, Slot],
    lexical_led: bool,
    now_ms: int,
    query_stems: set[str],
    focus: Focus,
    found: Supersession,
    factors: dict[str, float],
) -> tuple[list[Scored], list[tuple[str, MmrDetail]]]:
    """The candidates reranked, and the page MMR picks from the best of them, every entry
    after its live replacements (`factors` receives the supersession factor of the replaced)."""
    arms = gathered.arms
    known = {h.id: h.row for hits in arms.values() for h in hits if h.row is not None}
    pool_size = args.top_k * T.MMR_POOL_FACTOR
    scored = _rerank(conn, fused, known, now_ms, query_stems, focus, pool_size, None)
    # supersession only lowers scores: when no entry of the pool is replaced, the pool stands;
    # otherwise the rerank runs again with it (the pool it picks may differ)
    if any_replaced(conn, [entry_id for entry_id, _, _ in scored[:pool_size]]):
        scored = _rerank(conn, fused, known, now_ms, query_stems, focus, pool_size, found)
        scored = hold_below_successors(scored, found, factors)
    if lexical_led:  # the fusion left the lexical order alone: the cosine has its say here
        scored = _lexical_led_pool(conn, scored, cast(VectorArm, gathered.vector_arm), pool_size)
    pool = [(i, s) for i, s, _ in scored[:pool_size]]
    picked = mmr(pool, lambda ids: _prefixes(conn, ids, T.MMR_TEXT_CHARS), args.top_k)
    return scored, successors_first(picked, found) if found.newer else picked


def recall(
    conn: Connection, args: RecallArgs, now_ms: int, vector_arm: AnyVectorArm = None
) -> RecallAnswer:
    """vector_arm: the optional vector binding's arm (vectors.arm.VectorArm: `hits(conn,
    prefilter)` and `refine(conn, prefilter, head ids)`), or a DeferredVectorArm whose query
    vector is still being embedded; either's `resolve()` gives the arm (None: no vector arm).
    As of a moment, recall runs over the workspace as it held then (as_of.py) without the
    vector arm: the vectors are of today's words."""
    if args.as_of is not None:
        return read_as_of(conn, args, now_ms, _recall_then)
    timer = _Timer()
    gathered = _gather_arms(conn, args, now_ms, vector_arm, timer)
    arms = gathered.arms
    subjects = subject_terms(gathered.dropped)
    fused, fusion_info = _fuse(conn, arms, gathered.vector_arm, gathered.prefilter, timer, subjects)
    timer.lap("fusionMs")

    query_stems = {stem(t) for t in gathered.terms}
    lexical_led = (
        "vector" in arms and fusion_info.get("lexicalShare", 0.0) >= T.HYBRID_LEXICAL_LED_SHARE
    )
    found, factors = Supersession(), dict[str, float]()
    focus = Focus(subjects, query_names(args.query, gathered.terms))
    scored, picked = _page(
        conn, args, gathered, fused, lexical_led, now_ms, query_stems, focus, found, factors
    )
    row_of = {entry_id: row for entry_id, _, row in scored}
    final_of = {entry_id: final for entry_id, final, _ in scored}
    timer.lap("rerankMs")

    rows = _hydrate(conn, [i for i, _ in picked], now_ms, args.full)
    items = [
        _recall_item(
            rows[entry_id],
            fused[entry_id],
            arms,
            row_of[entry_id],
            final_of[entry_id],
            mmr_detail,
            now_ms,
            query_stems,
            focus,
            (factors.get(entry_id, 1.0), found.head(entry_id)),
        )
        for entry_id, mmr_detail in picked
    ]
    apply_budget(items, args.full)
    timer.lap("hydrateMs")
    # stale results, each with one question an agent can ask to re-confirm it
    return {
        "items": items,
        "revalidate": [revalidate_prompt(i) for i in items if i["stale"]],
        "queryUsed": gathered.query_used(args, fusion_info, lexical_led),
        "timings": timer.marks,
    }


def _recall_then(view: Connection, args: RecallArgs, at_ms: int) -> RecallAnswer:
    """A recall over the workspace as it held at `at_ms` (as_of.py), saying so."""
    answer = recall(view, args, at_ms)
    answer["queryUsed"]["asOf"] = iso_utc(at_ms, milliseconds=True)
    return answer


def note_recalled(conn: Connection, args: NoteRecalledArgs, now_ms: int) -> NotedAnswer:
    """The follow-up write of a recall: recall_count + 1 for each returned entry."""
    if args.ids:
        marks = ",".join("?" * len(args.ids))
        conn.execute(
            f"UPDATE entries SET recall_count = recall_count + 1 WHERE id IN ({marks})",
            list(args.ids),
        )
    return {"noted": len(args.ids)}
