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

import time

from minisphere.engine.arguments import NoteRecalledArgs, RecallArgs
from minisphere.engine.clock import iso_utc
from minisphere.engine.reads import entry_count
from minisphere.engine.retrieval.arms import Hit, graph_arm, keyword_arm, recency_arm
from minisphere.engine.retrieval.fusion import fuse, fuse_hybrid
from minisphere.engine.retrieval.prefilter import Prefilter
from minisphere.engine.retrieval.query_text import STOP_WORDS, distill, stem, tokenize
from minisphere.engine.retrieval.rerank import mmr, rerank_factors
from minisphere.engine.retrieval.snippets import apply_budget
from minisphere.engine.retrieval.temporal import extract_time_bounds
from minisphere.engine.rows import entries_by_id
from minisphere.engine.staleness import revalidate_prompt
from minisphere.errors import InvalidArgument


class _Timer:
    def __init__(self):
        self.marks: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.marks[name] = round((now - self._last) * 1000, 3)
        self._last = now


def _rounded(value):
    """Breakdown numbers to 8 significant decimals, done once for the returned items only."""
    if isinstance(value, float):
        return round(value, 8)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def _iso_or_none(ms: int | None) -> str | None:
    return None if ms is None else iso_utc(ms)


def _rewrite(conn, args: RecallArgs, now_ms: int):
    if not args.query.strip():
        raise InvalidArgument("recall: query must not be empty")
    text, bounds = extract_time_bounds(args.query, now_ms)
    tokens = tokenize(text)
    terms, dropped = distill(conn, tokens, entry_count(conn)) if tokens else ([], [])
    only_stop_words = bool(terms) and all(t in STOP_WORDS for t in terms)
    if only_stop_words and bounds.active:  # "what happened yesterday?": browse the period
        terms, dropped = [], list(dict.fromkeys(tokens))
    return text, bounds, terms, dropped


def recall(conn, args: RecallArgs, now_ms: int, vector_arm=None) -> dict:
    """vector_arm: the optional vector binding's arm (vectors.arm.VectorArm: `hits(conn,
    prefilter)` and `refine(conn, prefilter, head ids)`)."""
    timer = _Timer()
    text, bounds, terms, dropped = _rewrite(conn, args, now_ms)
    prefilter = Prefilter.build(args.kind, args.tag, bounds, now_ms)
    timer.lap("rewriteMs")

    relaxed = False
    arms: dict[str, list[Hit]] = {}
    if terms:
        keyword = keyword_arm(conn, terms, prefilter)
        if not keyword and bounds.active:
            # A time phrase must not turn a good query into nothing: drop the bounds and search
            # the phrase's words too (in "the 1990 world cup", 1990 is a topic, not a filter).
            relaxed, prefilter = True, prefilter.without_time()
            terms, dropped = distill(conn, tokenize(args.query), entry_count(conn))
            keyword = keyword_arm(conn, terms, prefilter)
        arms["keyword"] = keyword
        timer.lap("keywordMs")
        if args.hops > 0 and keyword:
            arms["graph"] = graph_arm(conn, keyword, args.hops, prefilter)
        timer.lap("graphMs")
        if vector_arm is not None:  # optional binding: KNN over sqlite-vec (minisphere/vectors)
            arms["vector"] = vector_arm.hits(conn, prefilter)
            timer.lap("vectorMs")
    elif bounds.active or prefilter.tag is not None:
        arms["recency"] = recency_arm(conn, prefilter)
        timer.lap("recencyMs")

    if "vector" in arms:
        fused = fuse_hybrid(arms, lambda head: vector_arm.refine(conn, prefilter, head))
    else:
        fused = fuse(arms)
    timer.lap("fusionMs")

    rows = entries_by_id(conn, list(fused), now_ms)
    query_stems = {stem(t) for t in terms}
    scored = []
    for entry_id, slot in fused.items():
        if entry_id not in rows:
            continue
        factors = rerank_factors(rows[entry_id], now_ms, query_stems)
        scored.append((entry_id, slot["fused"] * factors["product"], factors))
    scored.sort(key=lambda s: -s[1])
    factors_of = {entry_id: factors for entry_id, _, factors in scored}
    final_of = {entry_id: final for entry_id, final, _ in scored}
    picked = mmr([(i, s) for i, s, _ in scored], {i: rows[i]["content"] for i, _, _ in scored},
                 args.top_k)
    timer.lap("rerankMs")

    items = []
    for entry_id, mmr_detail in picked:
        entry = rows[entry_id]
        entry["recallCount"] += 1
        arm_detail = fused[entry_id]["arms"]
        items.append({
            **entry,
            "score": round(final_of[entry_id], 8),
            "breakdown": _rounded({
                "keyword": arm_detail.get("keyword"),
                "graph": arm_detail.get("graph"),
                "recency": arm_detail.get("recency"),
                **({"vector": arm_detail.get("vector")} if "vector" in arms else {}),
                "fused": fused[entry_id]["fused"],
                "rerank": factors_of[entry_id],
                "final": final_of[entry_id],
                "mmr": mmr_detail,
            }),
        })
    apply_budget(items, args.full)
    timer.lap("hydrateMs")
    return {
        "items": items,
        # stale results, each with one question an agent can ask to re-confirm it
        "revalidate": [revalidate_prompt(item) for item in items if item["stale"]],
        "queryUsed": {
            "original": args.query,
            "text": text,
            "terms": terms,
            "droppedTerms": dropped,
            "timePhrases": bounds.phrases,
            "since": bounds.since_ms, "until": bounds.until_ms,
            "sinceIso": _iso_or_none(bounds.since_ms), "untilIso": _iso_or_none(bounds.until_ms),
            "boundsRelaxed": relaxed,
            "filters": {"kind": args.kind, "tag": prefilter.tag},
            "arms": {name: len(hits) for name, hits in arms.items()},
        },
        "timings": timer.marks,
    }


def note_recalled(conn, args: NoteRecalledArgs, now_ms: int) -> dict:
    """The follow-up write of a recall: recall_count + 1 for each returned entry."""
    if args.ids:
        marks = ",".join("?" * len(args.ids))
        conn.execute(f"UPDATE entries SET recall_count = recall_count + 1 WHERE id IN ({marks})",
                     list(args.ids))
    return {"noted": len(args.ids)}
