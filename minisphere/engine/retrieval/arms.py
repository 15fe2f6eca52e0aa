"""Retrieval arms. Each returns a ranked list of `Hit`s, best first."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from minisphere.engine.db import Connection
from minisphere.engine.reads import entry_count
from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.query_text import (
    content_terms,
    match_any,
    match_near_pairs,
    quote,
    stem,
)
from minisphere.engine.retrieval.sql_filters import ALWAYS_EXCLUDED_TAGS, Prefilter
from minisphere.engine.retrieval.stop_folded import literal_matches
from minisphere.engine.rows import id_chunks


@dataclass
class Hit:
    id: str
    score: float  # arm-specific, higher is better
    detail: dict[str, Any] = field(default_factory=dict)
    # RERANK_COLUMNS' values, when the arm read the entry's row anyway (see rerank_row)
    row: tuple[Any, ...] | None = field(default=None, compare=False, repr=False)


TAG_SEPARATOR = "\x1f"  # tags are normalized text: they never hold a control character
# The entry columns the rerank factors read, tags folded into one value, over the alias `e`;
# the content only as the short prefix the subject and brevity factors read
RERANK_COLUMNS = (
    "e.updated_at, e.recall_count, e.importance_score, e.volatility, "
    f"(SELECT group_concat(t.tag, '{TAG_SEPARATOR}') FROM tags t WHERE t.entry_id = e.id), "
    f"substr(e.content, 1, {T.RERANK_PREFIX_CHARS}), e.kind"
)
RERANK_TAGS_AT = 4  # where the folded tags sit among RERANK_COLUMNS


class RerankRow(TypedDict):
    updatedAt: int
    recallCount: int
    importance: float
    volatility: str
    tags: list[str]
    prefix: str
    kind: str  # episodic or semantic: brevity discounts episodes only


def rerank_row(values: Sequence[Any]) -> RerankRow:
    """RERANK_COLUMNS' values as the dict rerank_factors reads."""
    updated_at, recall_count, importance, volatility, tags, prefix, kind = values
    return {
        "updatedAt": updated_at,
        "recallCount": recall_count,
        "importance": importance,
        "volatility": volatility,
        "tags": tags.split(TAG_SEPARATOR) if tags else [],
        "prefix": prefix or "",
        "kind": kind,
    }  # first word: the subject; length and kind: brevity


def _bm25(
    conn: Connection, expression: str, prefilter: Prefilter, limit: int
) -> dict[str, tuple[float, int, tuple[Any, ...]]]:
    """entry id -> (-bm25 (higher is better), seq, RERANK_COLUMNS values) for one FTS5
    expression, the prefilter applied. The rerank values come with the same read, so recall need
    not look these entries up again (rerank_row turns them into what rerank_factors reads)."""
    if prefilter.only_always_on:
        # Few entries fail the always-on filters: rank in FTS5 alone (no per-match join), then
        # read the head's rows (a little more than needed) and drop excluded ones here; fall back
        # to the joined query if too many of the head were dropped.
        depth = limit + T.KEYWORD_HEAD_MARGIN
        head = conn.execute(
            "SELECT rowid, bm25(entries_fts) AS s FROM entries_fts "
            "WHERE entries_fts MATCH ? ORDER BY s LIMIT ?",
            (expression, depth),
        ).fetchall()
        marks = ",".join("?" * len(head))
        by_seq = {
            r[0]: r
            for r in conn.execute(
                f"SELECT e.seq, e.id, e.status, {RERANK_COLUMNS} FROM entries e WHERE e.seq IN ({marks})",
                [seq for seq, _ in head],
            ).fetchall()
        }
        kept = []
        for seq, bm25 in head:
            r = by_seq.get(seq)
            if r is None or r[2] == "deprecated":
                continue
            tags = r[3 + RERANK_TAGS_AT]
            if tags and any(tag in ALWAYS_EXCLUDED_TAGS for tag in tags.split(TAG_SEPARATOR)):
                continue
            kept.append((r[1], -bm25, seq, r[3:]))
        if len(kept) >= limit or len(head) < depth:
            return {entry_id: (score, seq, row) for entry_id, score, seq, row in kept[:limit]}
    where, params = prefilter.sql()
    rows = conn.execute(
        f"SELECT e.id, bm25(entries_fts) AS s, e.seq, {RERANK_COLUMNS} FROM entries_fts "
        "JOIN entries e ON e.seq = entries_fts.rowid "
        f"WHERE entries_fts MATCH ? AND {where} ORDER BY s LIMIT ?",
        [expression, *params, limit],
    ).fetchall()
    return {r[0]: (-r[1], r[2], r[3:]) for r in rows}


def _bm25_among(conn: Connection, expression: str, seqs: list[int]) -> dict[int, float]:
    """seq -> -bm25 of one FTS5 expression, for entries already found (and filtered).

    The expression is ranked over the index alone and the wanted rows picked out here: with
    `rowid IN (...)` FTS5 evaluates the whole expression once per listed rowid, so its cost
    would grow with the hits. Only the best PROXIMITY_SCAN_ROWS matches are read; a hit
    further down gains no proximity boost.
    """
    if not seqs:
        return {}
    wanted = set(seqs)
    return {
        seq: -bm25
        for seq, bm25 in conn.execute(
            "SELECT rowid, bm25(entries_fts) AS s FROM entries_fts WHERE entries_fts MATCH ? "
            "ORDER BY s LIMIT ?",
            (expression, T.PROXIMITY_SCAN_ROWS),
        )
        if seq in wanted
    }


def bounded_document_frequency(conn: Connection, term: str, cap: int) -> int:
    """How many entries contain the term, counting no further than `cap` (cost O(cap))."""
    return bounded_document_frequencies(conn, [term], cap)[term]


def bounded_document_frequencies(conn: Connection, terms: list[str], cap: int) -> dict[str, int]:
    """bounded_document_frequency of each term, in one statement (one round trip, not one each)."""
    if not terms:
        return {}
    sql = " UNION ALL ".join(
        f"SELECT {i}, (SELECT COUNT(*) FROM (SELECT 1 FROM entries_fts WHERE entries_fts MATCH ? "
        "LIMIT ?))"
        for i in range(len(terms))
    )
    params = [value for term in terms for value in (quote(term), cap)]
    return {terms[i]: count for i, count in conn.execute(sql, params).fetchall()}


def feedback_terms(
    conn: Connection,
    query_tokens: list[str],
    scores: dict[str, float],
    seqs: dict[str, int] | None = None,
) -> list[str]:
    """Expansion terms from the best hits (pseudo-relevance feedback, RM3-like).

    weight(t) = sum over the FEEDBACK_DOCS best hits d of tf(t, d) / |d| × score(d) / best score;
    the FEEDBACK_SHORTLIST heaviest terms found in at least two of those hits (query terms, stop
    words, digits and 1-letter terms excluded) are then weighted by idf = log(N / (1 + df)),
    where terms in more than max(FEEDBACK_MIN_DOC_CAP, FEEDBACK_MAX_DOC_RATIO × N) entries
    (never more than FEEDBACK_MAX_DOC_CAP) are too common to help and dropped; the
    FEEDBACK_TERMS heaviest remain, as stems: inflections of one word count as one term.
    """
    best = sorted(scores.items(), key=lambda kv: -kv[1])[: T.FEEDBACK_DOCS]
    if len(best) < T.FEEDBACK_MIN_HITS:
        return []
    marks = ",".join("?" * len(best))
    if seqs is not None:  # by rowid, and only a prefix: the cost does not grow with entry size
        by_seq = dict(
            conn.execute(
                f"SELECT seq, substr(content, 1, ?) FROM entries WHERE seq IN ({marks})",
                [T.FEEDBACK_TEXT_CHARS, *(seqs[i] for i, _ in best)],
            ).fetchall()
        )
        texts = {i: by_seq.get(seqs[i], "") for i, _ in best}
    else:
        texts = dict(
            conn.execute(
                f"SELECT id, substr(content, 1, ?) FROM entries WHERE id IN ({marks})",
                [T.FEEDBACK_TEXT_CHARS, *(i for i, _ in best)],
            ).fetchall()
        )
    query_stems = {stem(t) for t in query_tokens}
    top_score = best[0][1] or 1.0
    weights: dict[str, float] = {}
    seen_in: dict[str, int] = {}
    for entry_id, score in best:
        terms = content_terms(texts.get(entry_id, ""))
        for term in terms:
            if term in query_stems or len(term) < 2 or term.isdigit():
                continue
            weights[term] = weights.get(term, 0.0) + score / top_score / len(terms)
        for term in set(terms):
            seen_in[term] = seen_in.get(term, 0) + 1
    shortlist = sorted((t for t in weights if seen_in[t] >= 2), key=lambda t: -weights[t])[
        : T.FEEDBACK_SHORTLIST
    ]
    total = entry_count(conn) or 1
    cap = min(
        T.FEEDBACK_MAX_DOC_CAP, max(T.FEEDBACK_MIN_DOC_CAP, int(T.FEEDBACK_MAX_DOC_RATIO * total))
    )
    idf = {}
    for term, frequency in bounded_document_frequencies(conn, shortlist, cap).items():
        if 0 < frequency < cap:
            idf[term] = math.log(total / (1 + frequency))
    ranked = sorted(idf, key=lambda t: -weights[t] * idf[t])
    return ranked[: T.FEEDBACK_TERMS]


def _specific_query(
    conn: Connection, tokens: list[str], frequencies: dict[str, int] | None
) -> bool:
    """Every word of the query is rare: the hits are pinned down already, feedback is skipped."""
    if not frequencies or any(t not in frequencies for t in tokens):
        return False
    limit = max(T.FEEDBACK_SKIP_MIN_DOCS, T.FEEDBACK_SKIP_DOC_RATIO * entry_count(conn))
    return all(frequencies[t] <= limit for t in tokens)


def keyword_arm(
    conn: Connection,
    tokens: list[str],
    prefilter: Prefilter,
    frequencies: dict[str, int] | None = None,
    stopwatch: Callable[[], contextlib.AbstractContextManager[None]] | None = None,
    folded: frozenset[str] = frozenset(),
) -> list[Hit]:
    """FTS5 BM25 over the OR of the tokens (the words), plus two bounded additions:

    score = -bm25(words) - PROXIMITY_BOOST_WEIGHT × bm25(consecutive query terms near each other)
            - FEEDBACK_WEIGHT × bm25(expansion terms from the best hits)
    The proximity expression is ranked in FTS5 alone (no join with entries) and only its scores
    for the word hits are kept; expansion terms come from a bounded prefix of the best hits, and
    none are sought when every query word is rare (`frequencies`: distill's document counts).
    `stopwatch()`, if given, is a context manager timing the feedback round on its own.
    Tokens in `folded` (names the stemmer folds onto a stop word, query_text.folded_names) are
    searched by their letters (stop_folded.py), not in FTS5.
    """
    searched = [t for t in tokens if t not in folded]
    found = _bm25(conn, match_any(searched), prefilter, T.KEYWORD_ROW_CAP) if searched else {}
    if folded_here := [t for t in tokens if t in folded]:
        found = _with_folded_words(conn, found, folded_here, prefilter)
    words = {entry_id: score for entry_id, (score, _, _) in found.items()}
    seq_of = {entry_id: seq for entry_id, (_, seq, _) in found.items()}
    row_of = {entry_id: row for entry_id, (_, _, row) in found.items()}
    proximity: dict[str, float] = {}
    near = (
        match_near_pairs(searched, T.PROXIMITY_WINDOW_TOKENS) if T.PROXIMITY_BOOST_WEIGHT else None
    )
    if near and words:
        by_seq = _bm25_among(conn, near, list(seq_of.values()))
        proximity = {entry_id: by_seq[seq] for entry_id, seq in seq_of.items() if seq in by_seq}
    with (stopwatch or contextlib.nullcontext)():
        feedback = _feedback_scores(conn, tokens, words, seq_of, row_of, prefilter, frequencies)
    hits = []
    # the words' order, then the feedback's: a set union's order follows string hashing,
    # which differs per process, and equal scores then ranked differently from run to run
    for entry_id in [*words, *(i for i in feedback if i not in words)]:
        detail = {
            "bm25": words.get(entry_id, 0.0),
            "proximity": proximity.get(entry_id, 0.0),
            "feedback": feedback.get(entry_id, 0.0),
        }
        score = (
            words.get(entry_id, 0.0)
            + T.PROXIMITY_BOOST_WEIGHT * detail["proximity"]
            + T.FEEDBACK_WEIGHT * detail["feedback"]
        )
        hits.append(Hit(entry_id, score, detail, row_of.get(entry_id)))
    hits.sort(key=lambda h: -h.score)
    return hits[: T.KEYWORD_ROW_CAP]


def _with_folded_words(
    conn: Connection,
    found: dict[str, tuple[float, int, tuple[Any, ...]]],
    folded: list[str],
    prefilter: Prefilter,
) -> dict[str, tuple[float, int, tuple[Any, ...]]]:
    """The word hits with each word the stemmer folds onto a stop word added by its letters
    (stop_folded.py): its weight added to the entries holding it, the best KEYWORD_ROW_CAP kept."""
    merged = dict(found)
    for word in folded:
        for entry_id, (weight, seq, row) in literal_matches(
            conn, word, prefilter, RERANK_COLUMNS
        ).items():
            score = merged[entry_id][0] if entry_id in merged else 0.0
            merged[entry_id] = (score + weight, seq, row)
    best = sorted(merged, key=lambda i: -merged[i][0])[: T.KEYWORD_ROW_CAP]
    return {entry_id: merged[entry_id] for entry_id in best}


def _feedback_scores(
    conn: Connection,
    tokens: list[str],
    words: dict[str, float],
    seq_of: dict[str, int],
    row_of: dict[str, tuple[Any, ...]],
    prefilter: Prefilter,
    frequencies: dict[str, int] | None,
) -> dict[str, float]:
    """-bm25 of the expansion terms per entry (pseudo-relevance feedback); rows it reads are
    added to `row_of`. Empty when feedback is off or every query word is rare."""
    if not (T.FEEDBACK_WEIGHT and words) or _specific_query(conn, tokens, frequencies):
        return {}
    expansion = feedback_terms(conn, tokens, words, seq_of)
    feedback: dict[str, float] = {}
    if expansion:
        for entry_id, (score, _, row) in _bm25(
            conn, match_any(expansion), prefilter, T.KEYWORD_ROW_CAP
        ).items():
            feedback[entry_id] = score
            row_of.setdefault(entry_id, row)
    return feedback


def recency_arm(conn: Connection, prefilter: Prefilter) -> list[Hit]:
    """Newest first inside the prefilter: answers "what happened yesterday?" with no keywords."""
    where, params = prefilter.sql()
    rows = conn.execute(
        f"SELECT e.id, e.created_at FROM entries e WHERE {where} "
        "ORDER BY e.created_at DESC, e.seq DESC LIMIT ?",
        [*params, T.KEYWORD_ROW_CAP],
    ).fetchall()
    return [
        Hit(entry_id, float(created_at), {"createdAt": created_at}) for entry_id, created_at in rows
    ]


# What the vector binding writes into an auto-link's metadata (engine/vectors/semantic.py,
# json.dumps with sorted keys); tests/engine/vectors guards the two staying in step.
AUTO_LINK_MARK = '"by": "auto-link"'
_NOT_AUTO_LINK = "NOT (provenance = 'inferred' AND instr(coalesce(metadata, ''), ?) > 0)"


def _level_edges(
    conn: Connection, frontier: list[str], limit: int
) -> dict[str, list[tuple[str, float]]]:
    """(neighbour, edge weight) of each frontier node, both directions, its `limit` strongest
    edges first (newest first among equals), as `reads.neighbours_of` gives them -- for the
    whole level in one query (a query per node would dominate the graph arm's time). Without
    the binding's auto-links unless GRAPH_FOLLOWS_AUTO_LINKS."""
    if not frontier:
        return {}
    skip, skip_params = (
        ("", []) if T.GRAPH_FOLLOWS_AUTO_LINKS else (f"AND {_NOT_AUTO_LINK}", [AUTO_LINK_MARK])
    )
    rows = []
    for chunk, _ in id_chunks(frontier):
        rows += conn.execute(
            f"WITH f(node) AS (VALUES {','.join(['(?)'] * len(chunk))}), "
            "s AS (SELECT f.node AS node, e.dst AS other, e.weight AS weight, "
            f"e.updated_at AS updated_at FROM f JOIN edges e ON e.src = f.node {skip} "
            "UNION ALL SELECT f.node, e.src, e.weight, e.updated_at FROM f JOIN edges e "
            f"ON e.dst = f.node {skip}) "
            "SELECT node, other, weight FROM (SELECT node, other, weight, ROW_NUMBER() OVER "
            "(PARTITION BY node ORDER BY weight DESC, updated_at DESC) AS n FROM s) "
            "WHERE n <= ? ORDER BY node, n",
            [*chunk, *skip_params, *skip_params, limit],
        ).fetchall()
    edges: dict[str, list[tuple[str, float]]] = {node: [] for node in frontier}
    for node, other, weight in rows:
        edges[node].append((other, weight))
    return edges


def _followable(
    conn: Connection,
    frontier: list[str],
    level: dict[str, int],
    hop: int,
    where: str,
    params: list[Any],
) -> dict[str, list[tuple[str, float]]]:
    """Per node of the frontier, (neighbour, edge weight) that hop `hop` may follow: not
    reached on an earlier level than the parent's, and passing the prefilter -- checked for
    the whole level in one query (not one per node: the arm's cost follows its levels). Nodes
    this hop reaches get level `hop`, which passes, so deciding up front is the same as
    deciding node by node."""
    edges = _level_edges(conn, frontier, T.GRAPH_FANOUT_PER_NODE)
    candidates = {
        node: [
            (other, weight)
            for other, weight in edges[node]
            if level.get(other, hop) >= hop - 1 and other != node
        ]
        for node in frontier
    }
    wanted = list({other for pairs in candidates.values() for other, _ in pairs})
    allowed: set[str] = set()
    for chunk, marks in id_chunks(wanted):
        allowed.update(
            r[0]
            for r in conn.execute(
                f"SELECT e.id FROM entries e WHERE e.id IN ({marks}) AND {where}", chunk + params
            )
        )
    return {
        node: [(other, weight) for other, weight in pairs if other in allowed]
        for node, pairs in candidates.items()
    }


def graph_arm(conn: Connection, seeds: list[Hit], hops: int, prefilter: Prefilter) -> list[Hit]:
    """BFS from the best keyword hits over edges in both directions; each node's score is the
    support its graph neighbourhood gives it.

    A seed's base is its keyword score relative to the best seed. Each followed edge (p, d)
    adds 0.6 × weight(p, d) × base(p) to d, where base(p) is p's own seed score if p is a
    seed, else the support p gathered one hop earlier; along one path that is the contract's
    seed × 0.6^hop × product of edge weights, and several paths into one node add up (a turn
    whose neighbours both match is better supported than one with a single matching
    neighbour), up to GRAPH_SUPPORT_MAX (half the best seed's score: neither a dense cluster
    of weak matches nor a hub linked to many of them outweighs the best match). Seeds support
    each other too (hop 0). Only nodes reached at hop h expand at hop h + 1, and support never
    flows back to an earlier level, so no path counts twice.
    At most GRAPH_FANOUT_PER_NODE strongest edges per node and GRAPH_MAX_NODES nodes (seeds
    included); nodes failing the prefilter (deprecated, other kind, …) are neither returned
    nor traversed. Returned: every node with support, best first (a seed without any
    supporting neighbour is the keyword arm's alone and is not repeated here).
    """
    seeds = seeds[: T.GRAPH_SEED_COUNT]
    if not seeds or hops == 0 or conn.execute("SELECT 1 FROM edges LIMIT 1").fetchone() is None:
        return []
    top = max(h.score for h in seeds) or 1.0
    base = {h.id: h.score / top for h in seeds}
    level = dict.fromkeys(base, 0)  # BFS distance of every node taken so far
    support: dict[str, float] = {}
    via: dict[str, tuple[str, float]] = {}  # strongest single contributor
    frontier = [h.id for h in seeds]
    where, params = prefilter.sql()
    for hop in range(1, hops + 1):
        reached: list[str] = []
        followable = _followable(conn, frontier, level, hop, where, params)
        for node in frontier:
            giving = base[node]
            for other, weight in followable[node]:
                if other not in level:
                    if len(level) >= T.GRAPH_MAX_NODES:
                        continue
                    level[other] = hop
                    reached.append(other)
                elif level[other] == hop - 1 and hop > 1:
                    continue  # a sibling on the parent's own level: not a new path
                gift = T.GRAPH_HOP_DECAY * weight * giving
                support[other] = support.get(other, 0.0) + gift
                if gift > via.get(other, (None, 0.0))[1]:
                    via[other] = (node, gift)
        for node in reached:
            base[node] = support[node] = min(support[node], T.GRAPH_SUPPORT_MAX)
        frontier = reached
        if not frontier:
            break
    hits = [
        Hit(node, min(score, T.GRAPH_SUPPORT_MAX), {"hop": level[node], "via": via[node][0]})
        for node, score in support.items()
    ]
    hits.sort(key=lambda h: -h.score)
    return hits
