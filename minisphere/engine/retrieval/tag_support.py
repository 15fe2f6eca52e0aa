"""The tag arm: support for the entries filed under a tag that holds many of the query's matches.

A tag groups entries captured in one context: a conversation's session, a project, a meeting.
Where several keyword hits sit under one tag, that context is about what the query asks, and
its other entries -- those that answer in other words than the question's -- are likelier to
matter than a lone match elsewhere. Per candidate d (an entry the keyword or graph arm found):

    weight(tag) = sum over the keyword hits h filed under tag of keyword(h) / best keyword
    tag(d)      = max over d's tags of weight(tag) / the heaviest tag's weight      in (0, 1]

and fusion adds TAG_SUPPORT_WEIGHT × tag(d) to d's lexical score (fusion.py). It only reorders
what the other arms found: no entry enters the candidates through it. A tag on more than
COMMON_TERM_DOC_RATIO of the workspace's entries groups nothing (every candidate would share
it) and is not counted, nor are the tags the engine writes itself (`rolled-up`, a staleness
mark, a hint: bookkeeping, not context), nor the tag a recall is filtered by (every candidate
has it). Nothing is fitted: the tags and their sizes are this workspace's, read at recall time
(the keyword hits' tags come with the rows the keyword arm read; one indexed read for the
graph's finds, one for the tags' sizes). Entries without tags, or a workspace without them,
get nothing: the ranking is as without the arm.
"""

from __future__ import annotations

from minisphere.engine import constants as C
from minisphere.engine.db import Connection
from minisphere.engine.reads import entry_count
from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.arms import RERANK_TAGS_AT, TAG_SEPARATOR, Hit
from minisphere.engine.rows import id_chunks, tags_for


def _context(tag: str, filtered: str | None) -> bool:
    """A tag that says what its entries share: not one the engine writes (a staleness pass
    marking entries would otherwise change the ranking), nor the recall's own filter."""
    return tag != filtered and not tag.startswith(C.BOOKKEEPING_TAG_PREFIXES)


def _grouping(conn: Connection, tags: set[str]) -> set[str]:
    """The tags that are on at most COMMON_TERM_DOC_RATIO of the entries."""
    limit = T.COMMON_TERM_DOC_RATIO * entry_count(conn)
    ordered = sorted(tags)
    sizes: dict[str, int] = {}
    for chunk, marks in id_chunks(ordered):
        sizes.update(
            conn.execute(
                f"SELECT tag, count(*) FROM tags WHERE tag IN ({marks}) GROUP BY tag", chunk
            )
        )
    return {tag for tag in ordered if sizes.get(tag, 0) <= limit}


def _tags_of(
    conn: Connection, keyword: list[Hit], candidates: list[str], filtered: str | None
) -> dict[str, list[str]]:
    """The context tags of the keyword hits and the candidates: from the rows the keyword arm
    read already, and one indexed read for the rest (the graph's finds)."""
    tags: dict[str, list[str]] = {}
    for hit in keyword:
        if hit.row is not None:
            folded = hit.row[RERANK_TAGS_AT]
            tags[hit.id] = folded.split(TAG_SEPARATOR) if folded else []
    missing = [i for i in dict.fromkeys([*(h.id for h in keyword), *candidates]) if i not in tags]
    tags.update(tags_for(conn, missing))
    return {
        entry_id: [t for t in found if _context(t, filtered)]
        for entry_id, found in tags.items()
        if found
    }


def tag_arm(
    conn: Connection, keyword: list[Hit], candidates: list[str], filtered: str | None = None
) -> list[Hit]:
    """Hit(d, tag(d), {"tag": the heaviest of d's tags, "weight": its weight}) for each
    candidate filed under a tag that holds a keyword hit, best first (empty when the weight is
    0 or no candidate has such a tag). `filtered`: the tag the recall is filtered by."""
    if T.TAG_SUPPORT_WEIGHT <= 0 or not keyword or keyword[0].score <= 0:
        return []
    best = keyword[0].score
    tags = _tags_of(conn, keyword, candidates, filtered)
    weight: dict[str, float] = {}
    for hit in keyword:
        if hit.score > 0:
            for tag in tags.get(hit.id, ()):
                weight[tag] = weight.get(tag, 0.0) + hit.score / best
    kept = _grouping(conn, set(weight))
    weight = {tag: w for tag, w in weight.items() if tag in kept}
    if not weight:
        return []
    top = max(weight.values())
    hits = []
    for entry_id in dict.fromkeys(candidates):
        mine = [tag for tag in tags.get(entry_id, ()) if tag in weight]
        if mine:
            heaviest = mine[0] if len(mine) == 1 else max(mine, key=lambda t: (weight[t], t))
            hits.append(
                Hit(entry_id, weight[heaviest] / top, {"tag": heaviest, "weight": weight[heaviest]})
            )
    hits.sort(key=lambda h: -h.score)
    return hits
