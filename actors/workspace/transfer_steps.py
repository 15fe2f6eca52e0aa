"""The steps of an import or export that run inside the workspace's own actor, as ordinary
actor methods admitted like any call (so a restore or a hibernation waits for a chunk in
flight, and the file is only ever touched on the node that holds it):
- export: the first page takes a consistent copy of the file (online backup API) into a temp
  file next to it; pages of `EXPORT_PAGE_LINES` lines are then read from that copy, which is
  deleted after the last page (or after `EXPORT_SESSION_TTL_S` without a page);
- import: each request carries the header and a chunk of lines; an `ImportSession` per file
  (keyed by its digest) persists in the actor between chunks, and its checkpoint lives in the
  workspace file, so a re-sent or resumed import skips what is already applied.
`TransferSessions` holds both kinds of session for one actor; its methods run on a worker
thread, never on the actor's event loop.
"""

from __future__ import annotations

import itertools
import logging
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from typing_extensions import TypedDict

from minisphere.engine import db
from minisphere.engine.clock import SystemClock
from minisphere.errors import TransferError
from minisphere.hosting.host import WorkspaceHost
from minisphere.transfer import ImportSession, export_lines, export_raw
from minisphere.transfer.format import parse_record

log = logging.getLogger("minisphere.transfer")
EXPORT_PAGE_LINES = 2000
EXPORT_SESSION_TTL_S = 600.0


class ExportPage(TypedDict):
    lines: list[str]
    done: bool  # the last page: the export's copy is gone


class _Export:
    def __init__(self, lines: Iterator[str], conn: db.Connection, copy: str):
        self.lines, self.conn, self.copy = lines, conn, copy
        self.used_at = time.monotonic()

    def drop(self) -> None:
        self.conn.close()
        for suffix in ("", "-wal", "-shm"):
            Path(self.copy + suffix).unlink(missing_ok=True)


class TransferSessions:
    def __init__(self) -> None:
        self._lock = threading.Lock()  # pages and chunks may run on several threads
        self._exports: dict[str, _Export] = {}
        self._imports: dict[str, ImportSession] = {}

    def export_page(
        self, host: WorkspaceHost, export_id: str, number: int, max_lines: int
    ) -> ExportPage:
        """Page `number` of export `export_id` (page 0 takes the copy). A later page of an
        export this actor does not know (it restarted meanwhile) is refused: starting over
        silently would repeat lines in the middle of the stream."""
        self.expire_exports()
        with self._lock:
            session = self._exports.get(export_id)
            if session is None and number > 0:
                raise TransferError(
                    "the export was interrupted (the workspace restarted); start it again"
                )
            if session is None:
                fd, copy = tempfile.mkstemp(
                    prefix=".export-", suffix=".db", dir=str(host.path.parent)
                )
                os.close(fd)
                export_raw(host.path, copy)
                conn = db.connect(copy, readonly=True)
                session = self._exports[export_id] = _Export(
                    export_lines(conn, now_ms=SystemClock().now_ms()), conn, copy
                )
                # an export nobody finishes must not keep its full copy until the next one
                expiry = threading.Timer(EXPORT_SESSION_TTL_S + 1, self.expire_exports)
                expiry.daemon = True
                expiry.start()
            session.used_at = time.monotonic()
            lines = list(itertools.islice(session.lines, max_lines))
            done = len(lines) < max_lines
            if done:
                self._exports.pop(export_id).drop()
        return {"lines": lines, "done": done}

    def import_chunk(
        self, host: WorkspaceHost, key: str, header: str, lines: list[str], first: int, final: bool
    ) -> dict[str, int]:
        """Apply data lines `first..` of one file (identified by `key`)."""
        with self._lock:
            session = self._imports.get(key)
            workspace = host.workspace
            assert workspace is not None  # the caller made sure the file is open
            if session is None or session.workspace is not workspace:
                session = self._imports[key] = ImportSession(workspace, header, key)
            records = [parse_record(line, first + i + 1) for i, line in enumerate(lines)]
            before = session.applied
            host.calls.write_own(lambda: session.feed(records, first))  # the one write path
            if session.applied > before:
                host.snapshotter.note_writes(session.applied - before)  # snapshot triggers
            if final:
                self._imports.pop(key, None)
                return session.finish(first + len(lines) - 1)
            return {
                "applied": session.applied,
                "expected": session.total,
                **session.importer.report,
            }

    def expire_exports(self) -> None:
        """Drop the exports not asked for a page for EXPORT_SESSION_TTL_S, with their copies."""
        with self._lock:
            for stale in [
                k
                for k, v in self._exports.items()
                if time.monotonic() - v.used_at > EXPORT_SESSION_TTL_S
            ]:
                self._exports.pop(stale).drop()

    def drop_exports(self) -> None:
        """A forget happened: the copies exports read from still hold the forgotten text, so
        they go (such an export answers "interrupted" and is started again)."""
        with self._lock:
            for session in self._exports.values():
                session.drop()
            self._exports.clear()

    def close(self) -> None:
        with self._lock:
            for session in self._exports.values():
                session.drop()
            self._exports.clear()
            self._imports.clear()
