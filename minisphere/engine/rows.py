"""Turning database rows into the contract's camelCase JSON shapes."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any, cast

from minisphere.engine.db import Connection
from minisphere.engine.staleness import is_stale, shown_tags
from minisphere.wire.answers import Edge, Entry, ListedEntry

IDS_PER_QUERY = 500  # ids bound in one IN (...) list, well under SQLite's variable limit
ENTRY_COLUMNS = (
    "id, content, source, created_at, updated_at, recall_count, importance_score, "
    "claim_tag, evidence_ref, status, kind, volatility, stale_due_at"
)


def entry_dict(row: Sequence[Any], tags: list[str], now_ms: int) -> Entry:
    """An entry in its wire shape, staleness judged at `now_ms` (see staleness.py)."""
    (
        id_,
        content,
        source,
        created_at,
        updated_at,
        recall_count,
        importance,
        claim_tag,
        evidence_ref,
        status,
        kind,
        volatility,
        stale_due_at,
    ) = row[:13]
    stale = is_stale(stale_due_at, now_ms)
    return {
        "id": id_,
        "content": content,
        "source": source,
        "createdAt": created_at,
        "updatedAt": updated_at,
        "recallCount": recall_count,
        "importance": importance,
        "claimTag": claim_tag,
        "evidenceRef": evidence_ref,
        "status": status,
        "kind": kind,
        "volatility": volatility,
        "tags": shown_tags(tags, stale_due_at, now_ms),
        "stale": stale,
        "staleSince": stale_due_at if stale else None,
        "staleDueAt": stale_due_at,
    }


def bounded(entry: Entry, max_chars: int) -> ListedEntry:
    """The entry with its content cut to `max_chars` (list-style reads): a cut entry says so
    (`truncated`) and how long its content is (`contentChars`)."""
    content = entry["content"]
    if len(content) <= max_chars:
        # an uncut entry is a listed one without the optional cut fields (mypy cannot widen it)
        return cast("ListedEntry", entry)
    return {
        **entry,
        "content": content[:max_chars],
        "truncated": True,
        "contentChars": len(content),
    }


def id_chunks(ids: list[str]) -> Iterator[tuple[list[str], str]]:
    """`ids` in runs of at most IDS_PER_QUERY, each with its `?,?,…` marks for an IN list."""
    for start in range(0, len(ids), IDS_PER_QUERY):
        chunk = ids[start : start + IDS_PER_QUERY]
        yield chunk, ",".join("?" * len(chunk))


def tags_for(conn: Connection, ids: list[str]) -> dict[str, list[str]]:
    """Tags of many entries in one query per IDS_PER_QUERY ids, each list sorted."""
    found: dict[str, list[str]] = defaultdict(list)
    for chunk, marks in id_chunks(ids):
        for entry_id, tag in conn.execute(
            f"SELECT entry_id, tag FROM tags WHERE entry_id IN ({marks}) ORDER BY tag", chunk
        ):
            found[entry_id].append(tag)
    return found


def entries_by_id(conn: Connection, ids: list[str], now_ms: int) -> dict[str, Entry]:
    """Full entry dicts (with tags) for the given ids; missing ids are simply absent."""
    result: dict[str, Entry] = {}
    if not ids:
        return result
    rows: list[Any] = []
    for chunk, marks in id_chunks(ids):
        rows += conn.execute(
            f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id IN ({marks})", chunk
        ).fetchall()
    tag_map = tags_for(conn, [r[0] for r in rows])
    for row in rows:
        result[row[0]] = entry_dict(row, tag_map.get(row[0], []), now_ms)
    return result


def edge_dict(row: Sequence[Any]) -> Edge:
    src, dst, type_, weight, provenance, metadata, created_at, updated_at = row
    return {
        "src": src,
        "dst": dst,
        "type": type_,
        "weight": weight,
        "provenance": provenance,
        "metadata": json.loads(metadata) if metadata else None,
        "createdAt": created_at,
        "updatedAt": updated_at,
    }


def bounded_edge_dict(row: Sequence[Any], max_bytes: int) -> Edge:
    """The edge with its metadata left out when its JSON is over `max_bytes` (graphView): such
    an edge says so (`metadataOmitted`) and how big the metadata is (`metadataBytes`). Large
    metadata is never parsed here, only measured."""
    metadata = row[5]
    size = len(metadata.encode("utf-8")) if metadata else 0
    if size <= max_bytes:
        return edge_dict(row)
    return {**edge_dict((*row[:5], None, *row[6:])), "metadataOmitted": True, "metadataBytes": size}


EDGE_COLUMNS = "src, dst, type, weight, provenance, metadata, created_at, updated_at"
