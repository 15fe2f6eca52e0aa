"""The steps of an import or export that run inside the workspace's own actor (sent with
`__ray_call__` by `actors/ingress/transfer.py`), so the file is only ever touched on the node
that holds it, and writes take the workspace's one writer lock:
- export: the first page takes a consistent copy of the file (online backup API) into a temp
  file next to it; pages of `EXPORT_PAGE_LINES` lines are then read from that copy, which is
  deleted after the last page (or after `EXPORT_SESSION_TTL_S` without a page);
- import: each request carries the header and a chunk of lines; an `ImportSession` per file
  (keyed by its digest) persists in the actor between chunks, and its checkpoint lives in the
  workspace file, so a re-sent or resumed import skips what is already applied.
"""
from __future__ import annotations

import itertools
import logging
import os
import tempfile
import time

from minisphere.engine import db
from minisphere.engine.clock import SystemClock
from minisphere.errors import WorkspaceHibernating, as_named_error
from minisphere.transfer import ImportSession, export_lines, export_raw
from minisphere.transfer.format import parse_record

log = logging.getLogger("minisphere.transfer")
EXPORT_PAGE_LINES = 2000
EXPORT_SESSION_TTL_S = 600.0


def _host(actor):
    admission = getattr(actor, "admission", None)
    if admission is not None and admission.hibernating:
        raise WorkspaceHibernating(f"workspace {actor.workspace_id} is hibernating")
    host = getattr(actor, "host", None)
    if host is None or not host.is_open:
        raise WorkspaceHibernating(f"workspace {actor.workspace_id} is not open")
    return host


def _envelope(fn, *args) -> dict:
    try:
        return {"ok": True, "result": fn(*args)}
    except Exception as exc:  # noqa: BLE001 - answered as a named error
        return {"ok": False, "error": as_named_error(exc)}


def _drop_export(sessions: dict, export_id: str) -> None:
    _gen, conn, path, _at = sessions.pop(export_id)
    conn.close()
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(path + suffix)
        except FileNotFoundError:
            pass


def _export_page(actor, export_id: str, max_lines: int) -> dict:
    sessions = actor.__dict__.setdefault("_transfer_exports", {})
    for stale in [k for k, v in sessions.items() if time.monotonic() - v[3] > EXPORT_SESSION_TTL_S]:
        _drop_export(sessions, stale)
    if export_id not in sessions:
        host = _host(actor)
        fd, copy = tempfile.mkstemp(prefix=".export-", suffix=".db", dir=str(host.path.parent))
        os.close(fd)
        export_raw(host.path, copy)
        conn = db.connect(copy, readonly=True)
        sessions[export_id] = (export_lines(conn, now_ms=SystemClock().now_ms()), conn, copy, 0)
    gen, conn, copy, _ = sessions[export_id]
    sessions[export_id] = (gen, conn, copy, time.monotonic())
    lines = list(itertools.islice(gen, max_lines))
    done = len(lines) < max_lines
    if done:
        _drop_export(sessions, export_id)
    return {"lines": lines, "done": done}


def export_page(actor, export_id: str, max_lines: int) -> dict:
    """Runs in the workspace actor: the next page of an export (an envelope)."""
    return _envelope(_export_page, actor, export_id, max_lines)


def _import_chunk(actor, key: str, header: str, lines: list[str], first: int,
                  final: bool) -> dict:
    host = _host(actor)
    sessions = actor.__dict__.setdefault("_transfer_imports", {})
    session = sessions.get(key)
    if session is None or session.workspace is not host.workspace:
        session = sessions[key] = ImportSession(host.workspace, header, key)
    records = [parse_record(line, first + i + 1) for i, line in enumerate(lines)]
    before = session.applied
    session.feed(records, first)
    if session.applied > before:
        host.snapshotter.note_writes(session.applied - before)   # snapshot triggers count these
    if final:
        sessions.pop(key, None)
        return session.finish(first + len(lines) - 1)
    return {"applied": session.applied, "expected": session.total, **session.importer.report}


def import_chunk(actor, key: str, header: str, lines: list[str], first: int,
                 final: bool) -> dict:
    """Runs in the workspace actor: apply data lines `first..` of one file (an envelope)."""
    return _envelope(_import_chunk, actor, key, header, lines, first, final)
