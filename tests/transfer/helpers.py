"""Helpers of the transfer tests: build workspaces through the engine and compare exports."""

from __future__ import annotations

import io
import json

from minisphere.engine import db
from minisphere.transfer import export_lines

EXPORT_TIME_MS = 1_800_000_000_000


def export_text(ws) -> str:
    """The JSONL export of an open workspace (through a separate read-only connection)."""
    conn = db.connect(ws.path, readonly=True)
    try:
        return "".join(line + "\n" for line in export_lines(conn, now_ms=EXPORT_TIME_MS))
    finally:
        conn.close()


def body_lines(text: str) -> list[str]:
    """Every line but the header (which carries counts and the export time)."""
    return text.splitlines()[1:]


def header(text: str) -> dict:
    return json.loads(io.StringIO(text).readline())


def table_dump(ws) -> dict:
    """Every stored row that an export must carry, keyed for comparison (seq excluded)."""
    conn = ws.conn
    return {
        "entries": conn.execute(
            "SELECT id, content, source, created_at, updated_at, recall_count, importance_score,"
            " claim_tag, evidence_ref, status, kind, volatility, unclassified, content_hash,"
            " stale_due_at, stale_since, stale_checked_at FROM entries ORDER BY seq"
        ).fetchall(),
        "tags": conn.execute("SELECT entry_id, tag FROM tags ORDER BY entry_id, tag").fetchall(),
        "edges": conn.execute(
            "SELECT src, dst, type, weight, provenance, metadata, created_at,"
            " updated_at FROM edges ORDER BY src, dst, type"
        ).fetchall(),
        "revisions": conn.execute(
            "SELECT entry_id, content, at, reason FROM revisions ORDER BY entry_id, seq"
        ).fetchall(),  # per-entry order
        "fts": conn.execute("SELECT COUNT(*) FROM entries_fts_docsize").fetchone()[0],
        "count": conn.execute("SELECT value FROM counters WHERE name = 'entries'").fetchone()[0],
    }
