"""Export a workspace as JSONL (format: `transfer/format.py`) and as a raw, consistent copy of
its SQLite file.

- `export_lines(conn)` yields the lines from one read transaction (a consistent point in time);
  `export_file(db_path, out)` writes them from a read-only connection (the workspace may be in
  use meanwhile).
- `export_raw(db_path, dest)` copies the database with SQLite's online backup API.

Progress: every function takes `progress(done, total)` (lines or pages), called per batch.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from minisphere.engine import db
from minisphere.engine.db import Connection
from minisphere.engine.rows import EDGE_COLUMNS
from minisphere.errors import TransferError
from minisphere.transfer.format import CONTRACT, FORMAT_NAME, FORMAT_VERSION, dumps

Progress = Callable[[int, int], None]
EXPORT_PAGE_ENTRIES = 500  # entries read per query page
RAW_BACKUP_PAGES_PER_STEP = 1024  # backup API step size (pages), for progress

_ENTRY_SQL = (
    "SELECT seq, id, content, source, created_at, updated_at, recall_count, "
    "importance_score, claim_tag, evidence_ref, status, kind, volatility, unclassified, "
    "stale_due_at, stale_since, stale_checked_at FROM entries WHERE seq > ? "
    "ORDER BY seq LIMIT ?"
)


Row = tuple[Any, ...]  # a row as sqlite3 returns it


def _grouped(conn: Connection, sql: str, ids: list[str]) -> dict[str, list[Row]]:
    found: dict[str, list[Row]] = {}
    marks = ",".join("?" * len(ids))
    for row in conn.execute(sql.format(marks=marks), ids):
        found.setdefault(row[0], []).append(row[1:])
    return found


def _entry_record(row: Row, tags: list[Row], revisions: list[Row]) -> dict[str, object]:
    (
        _seq,
        id_,
        content,
        source,
        created,
        updated,
        recalls,
        importance,
        claim,
        evidence,
        status,
        kind,
        volatility,
        unclassified,
        due,
        since,
        checked,
    ) = row
    return {
        "record": "entry",
        "id": id_,
        "content": content,
        "source": source,
        "createdAt": created,
        "updatedAt": updated,
        "recallCount": recalls,
        "importance": float(importance),
        "claimTag": claim,
        "evidenceRef": evidence,
        "status": status,
        "kind": kind,
        "volatility": volatility,
        "unclassified": bool(unclassified),
        "staleDueAt": due,
        "staleSince": since,
        "staleCheckedAt": checked,
        "tags": [t[0] for t in tags],
        "revisions": [{"content": c, "at": at, "reason": r} for c, at, r in revisions],
    }


def _header_line(conn: Connection, now_ms: int) -> tuple[str, int]:
    """The header line, and how many entries and edges the lines after it hold."""
    counts = {
        name: conn.execute(f"SELECT COUNT(*) FROM {name}").fetchone()[0]
        for name in ("entries", "edges", "revisions", "tags")
    }
    schema = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0]
    header = dumps(
        {
            "record": "header",
            "format": FORMAT_NAME,
            "formatVersion": FORMAT_VERSION,
            "contract": CONTRACT,
            "schemaVersion": schema,
            "counts": counts,
            "exportedAt": now_ms,
        }
    )
    return header, counts["entries"] + counts["edges"]


def _entry_pages(conn: Connection) -> Iterator[list[str]]:
    """The entry lines, a page of EXPORT_PAGE_ENTRIES at a time (tags and revisions read per
    page, not per entry)."""
    last = 0
    while True:
        rows = conn.execute(_ENTRY_SQL, (last, EXPORT_PAGE_ENTRIES)).fetchall()
        if not rows:
            return
        ids = [r[1] for r in rows]
        tags = _grouped(
            conn,
            "SELECT entry_id, tag FROM tags WHERE entry_id IN ({marks}) ORDER BY entry_id, tag",
            ids,
        )
        revisions = _grouped(
            conn,
            "SELECT entry_id, content, at, reason FROM revisions "
            "WHERE entry_id IN ({marks}) ORDER BY seq",
            ids,
        )
        yield [
            dumps(_entry_record(row, tags.get(row[1], []), revisions.get(row[1], [])))
            for row in rows
        ]
        last = rows[-1][0]


def _edge_lines(conn: Connection) -> Iterator[str]:
    for src, dst, type_, weight, provenance, metadata, created, updated in conn.execute(
        f"SELECT {EDGE_COLUMNS} FROM edges ORDER BY rowid"
    ):
        yield dumps(
            {
                "record": "edge",
                "src": src,
                "dst": dst,
                "type": type_,
                "weight": float(weight),
                "provenance": provenance,
                "metadata": json.loads(metadata) if metadata else None,
                "createdAt": created,
                "updatedAt": updated,
            }
        )


def export_lines(
    conn: Connection, *, now_ms: int, progress: Progress | None = None
) -> Iterator[str]:
    """Header, entries, edges: every line from one read transaction (no newline at the end)."""
    conn.execute("BEGIN")
    try:
        header, total = _header_line(conn, now_ms)
        yield header
        done = 0
        for page in _entry_pages(conn):
            yield from page
            done += len(page)
            if progress:
                progress(done, total)
        for line in _edge_lines(conn):
            yield line
            done += 1
        if progress:
            progress(done, total)
    finally:
        conn.execute("COMMIT")


def export_file(
    db_path: str | Path, out: TextIO, *, now_ms: int, progress: Progress | None = None
) -> int:
    """Write the JSONL export of the workspace file at `db_path` to `out`; returns lines."""
    if not Path(db_path).is_file():
        raise TransferError(f"no workspace file at {db_path}")
    conn = db.connect(db_path, readonly=True)
    try:
        lines = 0
        for line in export_lines(conn, now_ms=now_ms, progress=progress):
            out.write(line + "\n")
            lines += 1
        return lines
    finally:
        conn.close()


def export_raw(
    db_path: str | Path, dest: str | Path, progress: Progress | None = None
) -> dict[str, str | int]:
    """A consistent copy of the database (online backup API), checked, then renamed in place."""
    source_path, dest = Path(db_path), Path(dest)
    if not source_path.is_file():
        raise TransferError(f"no workspace file at {source_path}")
    partial = dest.with_name(dest.name + ".partial")
    partial.unlink(missing_ok=True)
    source = db.connect(source_path, readonly=True)
    try:
        target = db.sqlite3.connect(str(partial))
        try:
            source.backup(
                target,
                pages=RAW_BACKUP_PAGES_PER_STEP,
                progress=(lambda _s, left, total: progress(total - left, total))
                if progress
                else None,
            )
            verdict = target.execute("PRAGMA integrity_check").fetchone()[0]
            target.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
        finally:
            target.close()
    finally:
        source.close()
    if verdict != "ok":
        partial.unlink(missing_ok=True)
        raise TransferError(f"the copy failed integrity_check: {verdict}")
    partial.replace(dest)
    return {"path": str(dest), "bytes": dest.stat().st_size}
