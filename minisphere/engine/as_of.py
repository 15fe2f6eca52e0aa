"""Reads as of a moment: the workspace as it held then, rebuilt in memory, read by the same code.

What the file records of its past, and so what a view at moment T holds:
  - the entries created at or before T (a forgotten entry is gone from the past too: forget
    deletes its revisions with it);
  - each with the content current at T: the content saved by the first revision after T, or the
    content of today when no revision came after T; `updatedAt` is the last write up to T;
  - the edges created at or before T between entries of the view (an edge removed by `unlink`
    leaves no trace, so it is absent from every moment);
  - the revisions made at or before T.
Status, tags, importance, claim tag, source and recall counts keep no history: the view shows
today's. Staleness is judged at T from the view's `updatedAt`.

The view is a private in-memory database with the workspace schema (copied from a template
built once per process), filled in SQL from the workspace file attached read-only: recall,
listRecent and getEntry then run over it unchanged, so BM25 statistics, graph hops and
supersession are those of the moment.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Protocol, TypeVar
from urllib.parse import quote

from minisphere.engine import constants as C
from minisphere.engine import db
from minisphere.engine.clock import iso_utc
from minisphere.errors import InvalidArgument

# RFC 3339 date-time: a date, a time (seconds required, fraction optional) and an offset
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$")


class AsOfArgs(Protocol):
    """Arguments of a read that may be asked as of a moment."""

    @property
    def as_of(self) -> str | None: ...

    def model_copy(self: ArgsT, *, update: dict[str, Any]) -> ArgsT: ...


ArgsT = TypeVar("ArgsT", bound=AsOfArgs)
AnswerT = TypeVar("AnswerT")

_template: db.Connection | None = None
_template_lock = threading.Lock()


def parse_as_of(text: str, now_ms: int) -> int:
    """Epoch ms of an `asOf` argument; InvalidArgument when it is not an RFC 3339 date-time or
    lies in the future by more than the clock skew allowed (a moment within it reads as now)."""
    if not RFC3339.match(text):
        raise InvalidArgument(
            f"asOf: {text[:64]!r} is not an RFC 3339 date-time (e.g. 2026-09-01T12:00:00Z)"
        )
    fraction = re.search(r"\.(\d+)", text)
    try:
        moment = datetime.fromisoformat(re.sub(r"\.\d+", "", text.upper().replace("Z", "+00:00")))
    except ValueError as exc:
        raise InvalidArgument(f"asOf: {text[:64]!r} is not a valid date-time ({exc})") from None
    millis = int((fraction.group(1) + "00")[:3]) if fraction else 0
    at_ms = int(moment.timestamp()) * 1000 + millis
    if at_ms > now_ms + C.AS_OF_FUTURE_SKEW_MS:
        raise InvalidArgument(
            f"asOf: {text} is in the future (now is {iso_utc(now_ms)}): the past can be asked "
            "about, the future cannot"
        )
    return min(at_ms, now_ms)


def _blank() -> db.Connection:
    """A fresh in-memory database with the workspace schema."""
    global _template
    with _template_lock:
        if _template is None:
            template = db.sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            db.migrate(template, 0)
            # a view is filled once, then only read: its keyword index is built in one pass
            # after the copy (`rebuild`), several times faster than a trigger per row
            template.execute("DROP TRIGGER entries_fts_insert")
            _template = template
        view = db.sqlite3.connect(
            ":memory:", isolation_level=None, check_same_thread=False, uri=True
        )
        _template.backup(view)
    return view


def _columns(view: db.Connection, table: str) -> list[str]:
    return [row[1] for row in view.execute(f"PRAGMA main.table_info({table})")]


# what a column of an entry held at T, where it is not today's value
_ENTRY_THEN = {
    # the words the entry held at T: those the first revision after T saved, else today's
    "content": "COALESCE((SELECT r.content FROM src.revisions r WHERE r.entry_id = e.id "
    "AND r.at > :at ORDER BY r.at, r.seq LIMIT 1), e.content)",
    # the last write up to T (a write after T moved today's updated_at past it)
    "updated_at": "CASE WHEN e.updated_at <= :at THEN e.updated_at ELSE "
    "MAX(e.created_at, COALESCE((SELECT MAX(r.at) FROM src.revisions r "
    "WHERE r.entry_id = e.id AND r.at <= :at), e.created_at)) END",
    "stale_since": "NULL",  # judged lazily at T (stale_due_at is set after the copy)
    "stale_checked_at": "NULL",
}


def _copy_statements(view: db.Connection) -> list[str]:
    """INSERT … SELECT from the attached file (`src`) into the view, table by table."""
    entries = _columns(view, "entries")
    edges = _columns(view, "edges")
    revisions = _columns(view, "revisions")
    due = " ".join(f"WHEN '{v}' THEN {ms}" for v, ms in C.STALE_AFTER_MS.items())
    return [
        f"INSERT INTO main.entries ({', '.join(entries)}) SELECT "
        + ", ".join(_ENTRY_THEN.get(n, "e." + n) for n in entries)
        + " FROM src.entries e WHERE e.created_at <= :at ORDER BY e.seq",
        "INSERT INTO main.entries_fts(entries_fts) VALUES ('rebuild')",
        f"UPDATE main.entries SET stale_due_at = updated_at + CASE volatility {due} END",
        "INSERT INTO main.tags (entry_id, tag) SELECT t.entry_id, t.tag FROM src.tags t "
        "CROSS JOIN main.entries e ON e.id = t.entry_id WHERE t.tag NOT LIKE :stale",
        # edges first (CROSS JOIN keeps that order): one probe per endpoint
        f"INSERT INTO main.edges ({', '.join(edges)}) SELECT "
        + ", ".join("g." + n for n in edges)
        + " FROM src.edges g CROSS JOIN main.entries s ON s.id = g.src "
        "CROSS JOIN main.entries d ON d.id = g.dst WHERE g.created_at <= :at",
        f"INSERT INTO main.revisions ({', '.join(revisions)}) SELECT "
        + ", ".join("r." + n for n in revisions)
        + " FROM src.revisions r WHERE r.at <= :at ORDER BY r.seq",
    ]


def fill(view: db.Connection, path: str, at_ms: int) -> None:
    """Copy into `view` (blank schema) what the workspace file at `path` held at `at_ms`.

    The file is attached read-only and copied in SQL, in one read transaction of its own: a
    commit made since the caller's snapshot can only add what happened after T, or take away
    what was forgotten (which a forget does to the past too)."""
    view.execute("ATTACH DATABASE ? AS src", (f"file:{quote(path)}?mode=ro",))
    try:
        view.execute("BEGIN")
        try:
            for statement in _copy_statements(view):
                view.execute(statement, {"at": at_ms, "stale": C.STALE_TAG_PREFIX + "%"})
        finally:
            view.execute("COMMIT")
    finally:
        view.execute("DETACH DATABASE src")


@contextmanager
def view_at(conn: db.Connection, at_ms: int) -> Iterator[db.Connection]:
    """A connection to the workspace behind `conn` as it held at `at_ms` (closed on exit)."""
    view = _blank()
    try:
        fill(view, db.conn_path(conn), at_ms)
        yield view
    finally:
        view.close()


Read = Callable[[db.Connection, ArgsT, int], AnswerT]


def read_as_of(
    conn: db.Connection, args: ArgsT, now_ms: int, read: Read[ArgsT, AnswerT]
) -> AnswerT:
    """`read` over the view at the moment `args.as_of` names, with that moment as its now."""
    assert args.as_of is not None
    at_ms = parse_as_of(args.as_of, now_ms)
    with view_at(conn, at_ms) as view:
        return read(view, args.model_copy(update={"as_of": None}), at_ms)
