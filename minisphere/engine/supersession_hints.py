"""Supersession hints as the file keeps them, with or without a vector binding attached.

A hint (found by `vectors/hints.py` at capture) is the reserved tag `supersession-candidate` on
the new entry and an inferred `relates_to` edge to the earlier entry, whose metadata says which
replaces which. It stays open until the agent settles it: a `supersedes` link between the two
confirms it, unlinking the edge (or re-linking it as the agent's own) dismisses it. `getBrief`
lists the open ones. The service itself never acts on a hint.
"""

from __future__ import annotations

import json

from minisphere.engine import writes
from minisphere.engine.db import Connection
from minisphere.wire.answers import SupersessionHint

HINT_TAG = "supersession-candidate"  # reserved: the capture carries a hint, open or settled
HINT_EDGE_BY = "supersession-hint"  # the `by` of the hint edge's metadata


def record(
    conn: Connection,
    entry_id: str,
    hint: SupersessionHint,
    weight: float,
    provider_name: str,
    now_ms: int,
) -> None:
    """The hint kept in the file: the reserved tag on the new entry and an inferred
    `relates_to` edge to the candidate (`weight`: an auto-link's at that cosine) whose metadata
    says which replaces which. The edge is what `getBrief` lists and what the agent unlinks to
    dismiss the hint."""
    writes.add_tags(conn, entry_id, [HINT_TAG])
    src, dst = writes.canonical_endpoints(entry_id, hint["id"], "relates_to")
    metadata = {
        "by": HINT_EDGE_BY,
        "entry": entry_id,
        "replaces": hint["id"],
        "cosine": hint["cosine"],
        "before": hint["before"],
        "after": hint["after"],
        "provider": provider_name,
    }
    conn.execute(
        "INSERT INTO edges(src, dst, type, weight, provenance, metadata, created_at, updated_at) "
        "VALUES (?, ?, 'relates_to', ?, 'inferred', ?, ?, ?) ON CONFLICT(src, dst, type) DO NOTHING",
        (src, dst, weight, json.dumps(metadata, sort_keys=True), now_ms, now_ms),
    )


# An open hint: its edge stands as the binding wrote it (inferred), the new entry still carries
# the tag, neither end is deprecated, and no `supersedes` edge joins the two either way. Read
# from the tag (indexed): the workspace's other edges are never scanned.
_OPEN_HINTS = f"""
SELECT n.id, o.id, json_extract(h.metadata, '$.before'), json_extract(h.metadata, '$.after')
FROM tags t
JOIN entries n ON n.id = t.entry_id AND n.status != 'deprecated'
JOIN edges h ON (h.src = n.id OR h.dst = n.id) AND h.type = 'relates_to'
  AND h.provenance = 'inferred' AND json_extract(h.metadata, '$.by') = '{HINT_EDGE_BY}'
  AND json_extract(h.metadata, '$.entry') = n.id
JOIN entries o ON o.id = json_extract(h.metadata, '$.replaces') AND o.status != 'deprecated'
WHERE t.tag = '{HINT_TAG}'
  AND NOT EXISTS (SELECT 1 FROM edges s WHERE s.type = 'supersedes'
                  AND ((s.src = n.id AND s.dst = o.id) OR (s.src = o.id AND s.dst = n.id)))
ORDER BY h.created_at DESC, n.seq DESC
LIMIT ?
"""


def open_hints(conn: Connection, limit: int) -> list[tuple[str, str, list[str], list[str]]]:
    """(entry, candidate, before, after) of the open hints, newest first."""
    return [
        (entry, candidate, json.loads(before), json.loads(after))
        for entry, candidate, before, after in conn.execute(_OPEN_HINTS, (limit,)).fetchall()
    ]
