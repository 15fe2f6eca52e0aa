"""Importing a JSONL export (the whole story: `minisphere/transfer/__init__.py`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from minisphere.engine.db import Connection, read_meta, write_meta
from minisphere.engine.location import advance
from minisphere.engine.normalize import content_hash, normalize_tags
from minisphere.engine.workspace import Workspace
from minisphere.engine.writes import canonical_endpoints
from minisphere.errors import ImportFormatError, ImportGap
from minisphere.files import sha256_file
from minisphere.transfer.format import (
    EdgeRecord,
    EntryRecord,
    Record,
    metadata_text,
    parse_header,
    parse_record,
)

Progress = Callable[[int, int], None]
IMPORT_BATCH_LINES = 500  # records committed per import transaction
CHECKPOINT_PREFIX = "transfer.import:"


class _Importer:
    """What one import has learnt of its file (duplicates, ids, counts), applied on the
    connection of each transaction it is fed in."""

    def __init__(self) -> None:
        self.alias: dict[str, str] = {}  # duplicate entry id in the file -> id kept here
        self.seen: set[str] = set()  # entry ids of this file (never a content match)
        self.report: dict[str, int] = {
            "entries": 0,
            "edges": 0,
            "duplicateIds": 0,
            "duplicateContent": 0,
            "duplicateEdges": 0,
            "orphanEdges": 0,
        }

    def remember(self, conn: Connection, record: Record) -> None:
        """For lines a previous run already applied: rebuild the duplicate id map only."""
        if isinstance(record, EntryRecord):
            if not self._has(conn, record.id):
                match = self._content_match(conn, record.content)
                if match:
                    self.alias[record.id] = match
            self.seen.add(record.id)

    def _has(self, conn: Connection, entry_id: str) -> bool:
        return (
            conn.execute("SELECT 1 FROM entries WHERE id = ?", (entry_id,)).fetchone() is not None
        )

    def _content_match(self, conn: Connection, content: str) -> str | None:
        """The first entry that was here before this file with the same normalized content."""
        entry_id: str  # the column is TEXT
        for (entry_id,) in conn.execute(
            "SELECT id FROM entries WHERE content_hash = ? ORDER BY seq", (content_hash(content),)
        ):
            if entry_id not in self.seen:
                return entry_id
        return None

    def apply(self, conn: Connection, record: Record) -> None:
        if isinstance(record, EntryRecord):
            self._entry(conn, record)
        else:
            self._edge(conn, record)

    def _entry(self, conn: Connection, r: EntryRecord) -> None:
        if r.id in self.seen:
            raise ImportFormatError(f"entry {r.id} appears twice in the file")
        if self._has(conn, r.id):
            self.seen.add(r.id)
            self.report["duplicateIds"] += 1
            return
        match = self._content_match(conn, r.content)
        self.seen.add(r.id)
        if match:
            self.alias[r.id] = match
            self.report["duplicateContent"] += 1
            return
        conn.execute(
            "INSERT INTO entries(id, content, source, created_at, updated_at, recall_count, "
            "importance_score, claim_tag, evidence_ref, status, kind, volatility, unclassified, "
            "content_hash, stale_due_at, stale_since, stale_checked_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                r.id,
                r.content,
                r.source,
                r.created_at,
                r.updated_at,
                r.recall_count,
                r.importance,
                r.claim_tag,
                r.evidence_ref,
                r.status,
                r.kind,
                r.volatility,
                int(r.unclassified),
                content_hash(r.content),
                r.stale_due_at,
                r.stale_since,
                r.stale_checked_at,
            ),
        )
        conn.executemany(
            "INSERT OR IGNORE INTO tags(entry_id, tag) VALUES (?, ?)",
            [(r.id, t) for t in normalize_tags(r.tags, allow_system=True)],
        )
        conn.executemany(
            "INSERT INTO revisions(entry_id, content, at, reason) VALUES (?, ?, ?, ?)",
            [(r.id, v.content, v.at, v.reason) for v in r.revisions],
        )
        self.report["entries"] += 1

    def _edge(self, conn: Connection, r: EdgeRecord) -> None:
        src, dst = self.alias.get(r.src, r.src), self.alias.get(r.dst, r.dst)
        if src == dst or not (self._has(conn, src) and self._has(conn, dst)):
            self.report["orphanEdges"] += 1
            return
        src, dst = canonical_endpoints(src, dst, r.type)
        cursor = conn.execute(
            "INSERT OR IGNORE INTO edges(src, dst, type, weight, provenance, metadata, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                src,
                dst,
                r.type,
                r.weight,
                r.provenance,
                metadata_text(r.metadata),
                r.created_at,
                r.updated_at,
            ),
        )
        self.report["edges" if cursor.rowcount else "duplicateEdges"] += 1


def _checkpoint(conn: Connection, key: str, value: int | None) -> None:
    write_meta(conn, key, None if value is None else str(value))


class ImportSession:
    """One file's import into an open `Workspace`, fed in batches (also across service calls).

    `feed(records, done)` applies a batch in one transaction that also stores the checkpoint
    `done` (data lines applied so far); records a previous run already applied (at or below
    the stored checkpoint) only rebuild the duplicate map. `finish()` drops the checkpoint.
    """

    def __init__(self, workspace: Workspace, header_line: str, checkpoint_key: str) -> None:
        self.workspace = workspace
        self.header = parse_header(header_line)
        self.total = self.header.counts.entries + self.header.counts.edges
        self.key = CHECKPOINT_PREFIX + checkpoint_key
        with workspace.transaction() as conn:  # under the workspace's writer lock
            stored = read_meta(conn, self.key)
        self.importer = _Importer()
        self.resumed = self.applied = int(stored) if stored is not None else 0

    def feed(self, records: list[Record], first: int) -> None:
        """`records` are data lines number `first` (1-based) onwards. Refused, changing
        nothing, when they start past the line after the last one applied."""
        if first > self.applied + 1:
            raise ImportGap(
                f"this chunk starts at line {first} but the import has applied "
                f"lines up to {self.applied} only: send from line "
                f"{self.applied + 1}"
            )
        last = first + len(records) - 1
        position = None
        with self.workspace.transaction() as conn:
            for index, record in enumerate(records, start=first):
                if index <= self.applied:
                    self.importer.remember(conn, record)
                else:
                    self.importer.apply(conn, record)
            if last > self.applied:
                _checkpoint(conn, self.key, last)
                position = advance(conn)  # imported lines change the memory (its position)
        if position is not None:
            self.workspace.position = position  # committed
        self.applied = max(self.applied, last)

    def finish(self, lines: int) -> dict[str, int]:
        with self.workspace.transaction() as conn:
            _checkpoint(conn, self.key, None)
        return dict(
            self.importer.report,
            lines=lines,
            resumedFrom=self.resumed,
            expected=self.total,
            complete=lines == self.total,
        )


def import_lines(
    workspace: Workspace,
    lines: Iterable[str],
    *,
    checkpoint_key: str,
    batch_lines: int = IMPORT_BATCH_LINES,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Import an export's lines into an open `Workspace`; resumable under `checkpoint_key`."""
    iterator = iter(lines)
    header_line = next(iterator, None)
    if header_line is None or not header_line.strip():
        raise ImportFormatError("line 1: the file is empty (no header line)")
    session = ImportSession(workspace, header_line, checkpoint_key)
    done, batch = 0, []
    for number, line in enumerate(iterator, start=2):
        if not line.strip():
            continue
        batch.append(parse_record(line, number))
        done += 1
        if len(batch) >= batch_lines:
            session.feed(batch, done - len(batch) + 1)
            batch = []
            if progress and done > session.resumed:
                progress(done, session.total)
    if batch:
        session.feed(batch, done - len(batch) + 1)
    if progress:
        progress(done, session.total)
    return session.finish(done)


def import_file(
    workspace: Workspace,
    path: str | Path,
    *,
    batch_lines: int = IMPORT_BATCH_LINES,
    progress: Progress | None = None,
) -> dict[str, int | str]:
    """Import the JSONL file at `path`; the checkpoint is keyed by the file's SHA-256."""
    digest = sha256_file(path)
    with Path(path).open(encoding="utf-8", newline="\n") as handle:
        report = import_lines(
            workspace,
            handle,
            checkpoint_key=digest[:32],
            batch_lines=batch_lines,
            progress=progress,
        )
    return dict(report, file=str(path), sha256=digest)
