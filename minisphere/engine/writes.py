"""Write operations. Each runs inside a transaction opened by the caller (Workspace), so a
failure anywhere in one leaves nothing half-done."""

from __future__ import annotations

import json
from typing import Any

from minisphere.engine import constants as C
from minisphere.engine.arguments import (
    AppendArgs,
    CaptureArgs,
    IdArgs,
    LinkArgs,
    SetStatusArgs,
    UnlinkArgs,
    UpdateArgs,
)
from minisphere.engine.db import Connection
from minisphere.engine.normalize import check_id, content_hash, new_id, normalize_tags
from minisphere.engine.rows import EDGE_COLUMNS, edge_dict
from minisphere.engine.staleness import confirm, due_at
from minisphere.engine.supersession import refuse_cycle
from minisphere.engine.volatility import infer_volatility
from minisphere.errors import (
    ContentTooLarge,
    InvalidArgument,
    KindGateViolation,
    NotFound,
    SelfLink,
)
from minisphere.wire.answers import CaptureAnswer, ForgetAnswer, LinkAnswer, UnlinkAnswer

# Edge types whose endpoints must be episodic entries (events): (src must, dst must).
KIND_GATES = {"decided": (True, False), "follows": (True, True)}


def check_content(text: str, field: str = "content") -> str:
    if not text.strip():
        raise InvalidArgument(f"{field} must not be empty or whitespace")
    if "\x00" in text:
        raise InvalidArgument(f"{field} must not contain NUL characters")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:  # lone surrogates: not storable text
        raise InvalidArgument(f"{field} must be valid Unicode text (no lone surrogates)") from None
    if size > C.MAX_CONTENT_BYTES:
        raise ContentTooLarge(f"{field} is {size} bytes; the limit is {C.MAX_CONTENT_BYTES} bytes")
    return text


def require_entry(conn: Connection, entry_id: str, field: str = "id") -> tuple[Any, ...]:
    check_id(entry_id, field)
    row = conn.execute(
        "SELECT id, content, source, kind FROM entries WHERE id = ?", (entry_id,)
    ).fetchone()
    if row is None:
        raise NotFound(f"no entry with {field} {entry_id}")
    return tuple(row)


def capture(conn: Connection, args: CaptureArgs, now_ms: int) -> CaptureAnswer:
    check_content(args.content)
    tags = normalize_tags(args.tags)
    digest = content_hash(args.content)
    match = conn.execute(
        "SELECT id, source FROM entries WHERE content_hash = ? ORDER BY seq LIMIT 1", (digest,)
    ).fetchone()
    if match is not None:
        match_id, match_source = match
        # The same fact again from a different, named source is independent evidence for it.
        independent = (
            args.source is not None and match_source is not None and args.source != match_source
        )
        if not independent:
            return {"outcome": "blocked", "matchId": match_id}
        confirm(conn, match_id, now_ms)
        return {"outcome": "blocked", "matchId": match_id, "confirmed": True}
    entry_id = new_id()
    volatility = args.volatility or infer_volatility(args.content)
    kind = args.kind or C.DEFAULT_KIND
    unclassified = int(args.volatility is None or args.kind is None)
    conn.execute(
        "INSERT INTO entries(id, content, source, created_at, updated_at, importance_score, "
        "claim_tag, evidence_ref, status, kind, volatility, unclassified, content_hash, "
        "stale_due_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            entry_id,
            args.content,
            args.source,
            now_ms,
            now_ms,
            args.importance,
            args.claim_tag,
            args.evidence_ref,
            args.status,
            kind,
            volatility,
            unclassified,
            digest,
            due_at(now_ms, volatility),
        ),
    )
    add_tags(conn, entry_id, tags)
    return {"outcome": "stored", "id": entry_id}


def add_tags(conn: Connection, entry_id: str, tags: list[str]) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO tags(entry_id, tag) VALUES (?, ?)", [(entry_id, tag) for tag in tags]
    )


def _replace_content(
    conn: Connection, entry_id: str, old: str, new: str, reason: str, now_ms: int
) -> None:
    check_content(new)
    conn.execute(
        "INSERT INTO revisions(entry_id, content, at, reason) VALUES (?, ?, ?, ?)",
        (entry_id, old, now_ms, reason),
    )
    conn.execute(
        "UPDATE entries SET content = ?, content_hash = ? WHERE id = ?",
        (new, content_hash(new), entry_id),
    )
    confirm(conn, entry_id, now_ms)


def append(conn: Connection, args: AppendArgs, now_ms: int) -> str:
    check_content(args.addition, "addition")
    tags = normalize_tags(args.tags)
    _, old, _, _ = require_entry(conn, args.id)
    _replace_content(
        conn, args.id, old, f"{old.rstrip()}\n{args.addition.strip()}", "append", now_ms
    )
    changes = {
        "importance_score": args.importance,
        "claim_tag": args.claim_tag,
        "evidence_ref": args.evidence_ref,
        "source": args.source,
    }
    for column, value in changes.items():
        if value is not None:
            conn.execute(f"UPDATE entries SET {column} = ? WHERE id = ?", (value, args.id))
    add_tags(conn, args.id, tags)
    check_tag_count(conn, args.id)
    return args.id


def check_tag_count(conn: Connection, entry_id: str) -> None:
    """An entry carries at most MAX_TAGS_PER_ENTRY tags of its own (the engine's `stale:`
    marks do not count): an append adding tags must not go past it."""
    held = conn.execute(
        "SELECT COUNT(*) FROM tags WHERE entry_id = ? AND tag NOT LIKE ?",
        (entry_id, C.STALE_TAG_PREFIX + "%"),
    ).fetchone()[0]
    if held > C.MAX_TAGS_PER_ENTRY:
        raise InvalidArgument(
            f"entry {entry_id} would carry {held} tags; the limit is {C.MAX_TAGS_PER_ENTRY}"
        )


def update(conn: Connection, args: UpdateArgs, now_ms: int) -> str:
    check_content(args.content)
    _, old, _, _ = require_entry(conn, args.id)
    if old == args.content:  # same words again: a confirmation, not a new revision
        confirm(conn, args.id, now_ms)
    else:
        _replace_content(conn, args.id, old, args.content, "update", now_ms)
    return args.id


def set_status(conn: Connection, args: SetStatusArgs, now_ms: int) -> str:
    require_entry(conn, args.id)
    conn.execute("UPDATE entries SET status = ? WHERE id = ?", (args.status, args.id))
    return args.id


def forget(conn: Connection, args: IdArgs, now_ms: int) -> ForgetAnswer:
    """Permanent: tags, edges, revisions and the FTS row go with the entry (FK cascade + trigger)."""
    require_entry(conn, args.id)
    conn.execute("DELETE FROM entries WHERE id = ?", (args.id,))
    return {"forgotten": True, "id": args.id}


def canonical_endpoints(src: str, dst: str, edge_type: str) -> tuple[str, str]:
    """`relates_to` is symmetric: stored once, smaller id first."""
    if edge_type == "relates_to" and dst < src:
        return dst, src
    return src, dst


def link(conn: Connection, args: LinkArgs, now_ms: int) -> LinkAnswer:
    if args.src == args.dst:
        raise SelfLink(f"an entry cannot be linked to itself ({args.src})")
    _, _, _, src_kind = require_entry(conn, args.src, "src")
    _, _, _, dst_kind = require_entry(conn, args.dst, "dst")
    gate = KIND_GATES.get(args.type)
    if gate is not None:
        src_needs, dst_needs = gate
        if src_needs and src_kind != "episodic":
            raise KindGateViolation(
                f"'{args.type}' needs an episodic src; {args.src} is {src_kind}"
            )
        if dst_needs and dst_kind != "episodic":
            raise KindGateViolation(
                f"'{args.type}' needs an episodic dst; {args.dst} is {dst_kind}"
            )
    metadata = None
    if args.metadata is not None:
        try:  # strict JSON only: no NaN/Infinity, no non-JSON Python objects, no lone surrogates
            metadata = json.dumps(
                args.metadata, ensure_ascii=False, sort_keys=True, allow_nan=False
            )
            size = len(metadata.encode("utf-8"))
        except (TypeError, ValueError) as exc:
            raise InvalidArgument(f"edge metadata must be a plain JSON object: {exc}") from None
        if size > C.MAX_METADATA_BYTES:
            raise ContentTooLarge(f"edge metadata is over {C.MAX_METADATA_BYTES} bytes")
    src, dst = canonical_endpoints(args.src, args.dst, args.type)
    existed = (
        conn.execute(
            "SELECT 1 FROM edges WHERE src = ? AND dst = ? AND type = ?", (src, dst, args.type)
        ).fetchone()
        is not None
    )
    if args.type == "supersedes" and not existed:
        refuse_cycle(conn, src, dst)
    conn.execute(
        "INSERT INTO edges(src, dst, type, weight, provenance, metadata, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(src, dst, type) DO UPDATE SET "
        "weight = excluded.weight, provenance = excluded.provenance, "
        "metadata = COALESCE(excluded.metadata, edges.metadata), updated_at = excluded.updated_at",
        (src, dst, args.type, args.weight, args.provenance, metadata, now_ms, now_ms),
    )
    row = conn.execute(
        f"SELECT {EDGE_COLUMNS} FROM edges WHERE src = ? AND dst = ? AND type = ?",
        (src, dst, args.type),
    ).fetchone()
    return {"edge": edge_dict(row), "created": not existed}


def unlink(conn: Connection, args: UnlinkArgs, now_ms: int) -> UnlinkAnswer:
    check_id(args.src, "src")
    check_id(args.dst, "dst")
    src, dst = canonical_endpoints(args.src, args.dst, args.type)
    cursor = conn.execute(
        "DELETE FROM edges WHERE src = ? AND dst = ? AND type = ?", (src, dst, args.type)
    )
    return {"removed": cursor.rowcount > 0}
