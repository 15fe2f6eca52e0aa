"""Read operations (everything but recall, which lives in `retrieval/`)."""

from __future__ import annotations

from collections import deque
from typing import Any

from minisphere.engine import constants as C
from minisphere.engine.arguments import (
    GetEntryArgs,
    GraphViewArgs,
    IdArgs,
    ListRecentArgs,
    TagsArgs,
)
from minisphere.engine.as_of import read_as_of
from minisphere.engine.clock import iso_utc
from minisphere.engine.db import Connection
from minisphere.engine.normalize import check_id, normalize_tag
from minisphere.engine.rows import (
    EDGE_COLUMNS,
    ENTRY_COLUMNS,
    bounded,
    bounded_edge_dict,
    edge_dict,
    entries_by_id,
    entry_dict,
    tags_for,
)
from minisphere.engine.staleness import lazy_stale_tag_counts, tag_filter_sql
from minisphere.engine.supersession import chain_of
from minisphere.engine.supersession_hints import open_hints
from minisphere.engine.writes import require_entry
from minisphere.errors import NotFound
from minisphere.wire.answers import (
    BriefAnswer,
    ConnectionsAnswer,
    CountAnswer,
    Edge,
    Entry,
    EntryDetail,
    EntryList,
    GraphAnswer,
    GraphNode,
    Preview,
    StatsAnswer,
    TagCount,
    TagsAnswer,
)
from minisphere.wire.answers import (
    Connection as Neighbour,
)


def get_entry(conn: Connection, args: IdArgs, now_ms: int) -> EntryDetail:
    if isinstance(args, GetEntryArgs) and args.as_of is not None:
        require_entry(conn, args.id)  # not found today: not found at any moment
        return read_as_of(conn, args, now_ms, _get_entry_then)
    require_entry(conn, args.id)
    entry = entries_by_id(conn, [args.id], now_ms)[args.id]
    return {
        **entry,
        "revisionCount": conn.execute(
            "SELECT COUNT(*) FROM revisions WHERE entry_id = ?", (args.id,)
        ).fetchone()[0],
        "edgeCount": conn.execute(
            "SELECT (SELECT COUNT(*) FROM edges WHERE src = ?) + "
            "(SELECT COUNT(*) FROM edges WHERE dst = ?)",
            (args.id, args.id),
        ).fetchone()[0],
        "revisions": [
            {"content": content, "at": at, "reason": reason}
            for content, at, reason in conn.execute(
                "SELECT content, at, reason FROM revisions WHERE entry_id = ? "
                "ORDER BY seq DESC LIMIT 5",
                (args.id,),
            )
        ],
        "supersession": chain_of(conn, args.id),
    }


def _get_entry_then(conn: Connection, args: GetEntryArgs, now_ms: int) -> EntryDetail:
    if conn.execute("SELECT 1 FROM entries WHERE id = ?", (args.id,)).fetchone() is None:
        raise NotFound(f"entry {args.id} did not exist yet at {iso_utc(now_ms, milliseconds=True)}")
    return get_entry(conn, args, now_ms)


def list_recent(conn: Connection, args: ListRecentArgs, now_ms: int) -> EntryList:
    if args.as_of is not None:
        return read_as_of(conn, args, now_ms, list_recent)
    where = "1"
    params: list[Any] = []
    if args.tag is not None:
        where, params = tag_filter_sql("e", normalize_tag(args.tag), now_ms)
    columns = ", ".join("e." + c.strip() for c in ENTRY_COLUMNS.split(","))
    rows = conn.execute(
        f"SELECT {columns} FROM entries e WHERE {where} "
        "ORDER BY e.created_at DESC, e.seq DESC LIMIT ?",
        [*params, args.n],
    ).fetchall()
    tag_map = tags_for(conn, [r[0] for r in rows])
    return {
        "items": [
            bounded(entry_dict(r, tag_map.get(r[0], []), now_ms), C.LIST_CONTENT_MAX_CHARS)
            for r in rows
        ]
    }


def connections(conn: Connection, args: IdArgs, now_ms: int) -> ConnectionsAnswer:
    require_entry(conn, args.id)
    edges = neighbours_of(conn, args.id, C.CONNECTIONS_MAX_EDGES)
    neighbours = entries_by_id(conn, list({other for other, _ in edges}), now_ms)
    items: list[Neighbour] = []
    for other, row in edges:
        edge = edge_dict(row)
        outgoing = edge["src"] == args.id
        symmetric = edge["type"] == "relates_to"
        items.append(
            {
                "edge": edge,
                "direction": "both" if symmetric else ("out" if outgoing else "in"),
                "entry": bounded(neighbours[other], C.LIST_CONTENT_MAX_CHARS),
            }
        )
    return {"id": args.id, "items": items, "supersession": chain_of(conn, args.id)}


def neighbours_of(conn: Connection, node: str, limit: int) -> list[tuple[Any, ...]]:
    """(neighbour id, edge row) pairs of one node, both directions, strongest edges first
    (newest first among equals). Shared by connections, graphView and recall's graph arm."""
    rows = conn.execute(
        f"SELECT {EDGE_COLUMNS} FROM edges WHERE src = ? UNION ALL "
        f"SELECT {EDGE_COLUMNS} FROM edges WHERE dst = ? ORDER BY weight DESC, updated_at DESC "
        "LIMIT ?",
        (node, node, limit),
    ).fetchall()
    return [(r[1] if r[0] == node else r[0], r) for r in rows]


def graph_view(conn: Connection, args: GraphViewArgs, now_ms: int) -> GraphAnswer:
    for seed in args.seed_ids:
        check_id(seed, "seedIds[]")
    seeds = [
        s
        for s in dict.fromkeys(args.seed_ids)
        if conn.execute("SELECT 1 FROM entries WHERE id = ?", (s,)).fetchone()
    ]
    hop_of = {seed: 0 for seed in seeds}
    edges: dict[tuple[Any, ...], Edge] = {}
    queue = deque(seeds)
    truncated = False
    while queue:
        node = queue.popleft()
        if hop_of[node] >= args.hops:
            continue
        for other, row in neighbours_of(conn, node, C.GRAPH_VIEW_FANOUT_PER_NODE):
            if other not in hop_of:
                if len(hop_of) >= C.GRAPH_VIEW_MAX_NODES:
                    truncated = True
                    continue
                hop_of[other] = hop_of[node] + 1
                queue.append(other)
            edges[(row[0], row[1], row[2])] = bounded_edge_dict(
                row, C.GRAPH_VIEW_EDGE_METADATA_MAX_BYTES
            )
    entries = entries_by_id(conn, list(hop_of), now_ms)
    nodes: list[GraphNode] = [
        {**bounded(entries[i], C.LIST_CONTENT_MAX_CHARS), "hop": h} for i, h in hop_of.items()
    ]
    kept = [e for e in edges.values() if e["src"] in hop_of and e["dst"] in hop_of]
    return {
        "nodes": nodes,
        "edges": kept,
        "truncated": truncated,
        "missingSeedIds": [s for s in args.seed_ids if s not in hop_of],
    }


def get_tags(conn: Connection, args: TagsArgs, now_ms: int) -> TagsAnswer:
    """The `args.limit` most used tags with their counts (stale tags include entries judged
    stale lazily), and whether more are in use. Only a bounded number of rows is read into
    memory: the vocabulary may be as large as a write token makes it."""
    lazy = lazy_stale_tag_counts(conn, now_ms)
    # a lazily counted tag may climb into the first `limit`: read enough rows to cover it
    wanted = args.limit + len(lazy) + 1
    counts = dict(
        conn.execute(
            "SELECT tag, COUNT(*) AS n FROM tags GROUP BY tag ORDER BY n DESC, tag LIMIT ?",
            (wanted,),
        ).fetchall()
    )
    for tag, n in lazy.items():
        stored = counts.get(tag)
        if stored is None:
            stored = conn.execute("SELECT COUNT(*) FROM tags WHERE tag = ?", (tag,)).fetchone()[0]
        counts[tag] = stored + n
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return {
        "tags": [{"tag": tag, "count": n} for tag, n in ordered[: args.limit]],
        "truncated": len(ordered) > args.limit,
    }


def entry_count(conn: Connection) -> int:
    """Exact, O(1): kept by triggers (migration 0004)."""
    count: int = conn.execute("SELECT value FROM counters WHERE name = 'entries'").fetchone()[0]
    return count


def get_count(conn: Connection) -> CountAnswer:
    return {"count": entry_count(conn)}


def top_topics(conn: Connection, n: int = C.TOP_TOPICS_N) -> list[TagCount]:
    clauses = " AND ".join("tag NOT LIKE ?" for _ in C.BOOKKEEPING_TAG_PREFIXES)
    rows = conn.execute(
        f"SELECT tag, COUNT(*) AS c FROM tags WHERE {clauses} "
        "GROUP BY tag ORDER BY c DESC, tag LIMIT ?",
        [p + "%" for p in C.BOOKKEEPING_TAG_PREFIXES] + [n],
    )
    return [{"tag": tag, "count": c} for tag, c in rows]


def _counts_by(conn: Connection, column: str) -> dict[str, int]:
    return dict(
        conn.execute(f"SELECT {column}, COUNT(*) FROM entries GROUP BY {column}").fetchall()
    )


def get_stats(conn: Connection) -> StatsAnswer:
    count, avg_importance, unclassified = conn.execute(
        "SELECT COUNT(*), COALESCE(AVG(importance_score), 0), COALESCE(SUM(unclassified), 0) "
        "FROM entries"
    ).fetchone()
    return {
        "count": count,
        "avgImportance": avg_importance,
        "unclassified": unclassified,
        "topTopics": top_topics(conn),
        "byStatus": _counts_by(conn, "status"),
        "byKind": _counts_by(conn, "kind"),
        "byVolatility": _counts_by(conn, "volatility"),
        "edgeCount": conn.execute("SELECT COUNT(*) FROM edges").fetchone()[0],
    }


def _preview(entry: Entry) -> Preview:
    content = entry["content"]
    short = (
        content if len(content) <= C.BRIEF_PREVIEW_CHARS else content[: C.BRIEF_PREVIEW_CHARS] + "…"
    )
    return {
        "id": entry["id"],
        "preview": short,
        "createdAt": entry["createdAt"],
        "updatedAt": entry["updatedAt"],
        "kind": entry["kind"],
        "tags": entry["tags"],
        "importance": entry["importance"],
        "recallCount": entry["recallCount"],
    }


def get_brief(conn: Connection, now_ms: int) -> BriefAnswer:
    """Recent activity, top topics, resurface candidates and the open supersession hints
    (`revalidate`), in plain SQL (no model)."""
    since = now_ms - C.BRIEF_RECENT_WINDOW_MS
    captured, revised = conn.execute(
        "SELECT (SELECT COUNT(*) FROM entries WHERE created_at >= ?),"
        "       (SELECT COUNT(*) FROM revisions WHERE at >= ?)",
        (since, since),
    ).fetchone()
    recent_ids = [
        r[0]
        for r in conn.execute(
            "SELECT id FROM entries WHERE status != 'deprecated' ORDER BY updated_at DESC, seq DESC "
            "LIMIT ?",
            (C.BRIEF_RECENT_N,),
        )
    ]
    # Resurface: important, rarely used, not touched for a while -> worth a second look.
    resurface_ids = [
        r[0]
        for r in conn.execute(
            "SELECT id FROM entries WHERE status != 'deprecated' AND updated_at <= ? "
            "ORDER BY importance_score DESC, recall_count ASC, updated_at ASC LIMIT ?",
            (now_ms - C.BRIEF_RESURFACE_MIN_AGE_MS, C.BRIEF_RESURFACE_N),
        )
    ]
    hints = open_hints(conn, C.BRIEF_REVALIDATE_N)
    hinted = [i for entry, candidate, _, _ in hints for i in (entry, candidate)]
    entries = entries_by_id(conn, recent_ids + resurface_ids + hinted, now_ms)
    return {
        "generatedAt": now_ms,
        "recentActivity": {
            "windowMs": C.BRIEF_RECENT_WINDOW_MS,
            "captured": captured,
            "revised": revised,
            "entries": [_preview(entries[i]) for i in recent_ids],
        },
        "topTopics": top_topics(conn),
        "resurface": [_preview(entries[i]) for i in resurface_ids],
        "revalidate": [
            {
                "entry": _preview(entries[entry]),
                "candidate": _preview(entries[candidate]),
                "before": before,
                "after": after,
            }
            for entry, candidate, before, after in hints
        ],
        "count": entry_count(conn),
    }
