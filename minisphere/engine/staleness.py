"""Staleness (contract §7): entries not re-confirmed within their volatility's threshold.

An entry is stale once `now >= stale_due_at`, where stale_due_at = updated_at + STALE_AFTER_MS
of its volatility. Confirming writes (update, append, an exact re-capture from a different
source) move updated_at and clear the mark; recall never does (using a fact is not evidence).

Two paths that always agree, because both use `is_stale(stale_due_at, now)`:
- the pass (`runStalenessPass`, scheduler only) persists the mark: `stale_since` and the tag
  `stale:as-of:<YYYY-MM-DD of stale_due_at>`;
- the lazy path: every read computes the same fields on the fly for entries the pass has not
  reached yet, so answers are right even if the scheduler never ran.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from minisphere.engine import constants as C
from minisphere.engine.arguments import StalenessPassArgs
from minisphere.engine.db import Connection
from minisphere.wire.answers import Entry, StalenessPassAnswer
from minisphere.wire.recall_answer import Revalidate


def due_at(updated_at_ms: int, volatility: str) -> int:
    return updated_at_ms + C.STALE_AFTER_MS[volatility]


def is_stale(stale_due_at: int | None, now_ms: int) -> bool:
    return stale_due_at is not None and now_ms >= stale_due_at


def stale_tag(stale_due_at: int) -> str:
    return C.STALE_TAG_PREFIX + time.strftime("%Y-%m-%d", time.gmtime(stale_due_at / 1000))


def stale_tag_day(tag: str) -> tuple[int, int] | None:
    """[start, end) epoch ms of the day a `stale:as-of:<YYYY-MM-DD>` tag names, else None."""
    if not tag.startswith(C.STALE_TAG_PREFIX):
        return None
    try:
        day = datetime.strptime(tag[len(C.STALE_TAG_PREFIX) :], "%Y-%m-%d")
    except ValueError:
        return None
    start = int(day.replace(tzinfo=UTC).timestamp() * 1000)
    return start, start + C.DAY_MS


def tag_filter_sql(alias: str, tag: str, now_ms: int) -> tuple[str, list[Any]]:
    """SQL over `alias` (entries) matching entries that carry `tag`. For a stale tag it also
    matches entries the lazy judgement puts on that day, so filters agree before the pass."""
    clause = f"EXISTS (SELECT 1 FROM tags y WHERE y.entry_id = {alias}.id AND y.tag = ?)"
    day = stale_tag_day(tag)
    if day is None:
        return clause, [tag]
    lazy = (
        f"({alias}.stale_since IS NULL AND {alias}.stale_due_at <= ? "
        f"AND {alias}.stale_due_at >= ? AND {alias}.stale_due_at < ?)"
    )
    return f"({clause} OR {lazy})", [tag, now_ms, *day]


def lazy_stale_tag_counts(conn: Connection, now_ms: int) -> dict[str, int]:
    """Stale tags the pass has not written yet, with how many entries would carry each."""
    rows = conn.execute(
        "SELECT strftime('%Y-%m-%d', stale_due_at / 1000, 'unixepoch') AS day, COUNT(*) "
        "FROM entries WHERE stale_since IS NULL AND stale_due_at <= ? GROUP BY day",
        (now_ms,),
    )
    return {C.STALE_TAG_PREFIX + day: n for day, n in rows}


def shown_tags(tags: list[str], stale_due_at: int | None, now_ms: int) -> list[str]:
    """An entry's tags as a read shows them: with its stale tag once it is stale, even before
    the pass wrote the tag (lazy judgement; same rule as the pass)."""
    if not is_stale(stale_due_at, now_ms) or stale_due_at is None:
        return tags
    tag = stale_tag(stale_due_at)
    return tags if tag in tags else sorted([*tags, tag])


def confirm(conn: Connection, entry_id: str, now_ms: int) -> None:
    """A confirming write: updated_at = now, a new due date, any stale mark cleared."""
    volatility = conn.execute(
        "SELECT volatility FROM entries WHERE id = ?", (entry_id,)
    ).fetchone()[0]
    conn.execute(
        "UPDATE entries SET updated_at = ?, stale_due_at = ?, stale_since = NULL WHERE id = ?",
        (now_ms, due_at(now_ms, volatility), entry_id),
    )
    conn.execute(
        "DELETE FROM tags WHERE entry_id = ? AND tag LIKE ?", (entry_id, C.STALE_TAG_PREFIX + "%")
    )


def _mark(conn: Connection, entry_id: str, stale_due_at: int, now_ms: int) -> None:
    conn.execute(
        "UPDATE entries SET stale_since = ?, stale_checked_at = ? WHERE id = ?",
        (stale_due_at, now_ms, entry_id),
    )
    conn.execute(
        "INSERT OR IGNORE INTO tags(entry_id, tag) VALUES (?, ?)",
        (entry_id, stale_tag(stale_due_at)),
    )


def _clear(conn: Connection, entry_id: str, now_ms: int) -> None:
    conn.execute(
        "UPDATE entries SET stale_since = NULL, stale_checked_at = ? WHERE id = ?",
        (now_ms, entry_id),
    )
    conn.execute(
        "DELETE FROM tags WHERE entry_id = ? AND tag LIKE ?", (entry_id, C.STALE_TAG_PREFIX + "%")
    )


def _pending(conn: Connection, now_ms: int, limit: int) -> list[tuple[str, int, bool]]:
    """(id, stale_due_at, should_be_stale) of entries whose mark is wrong, most overdue first."""
    to_mark = conn.execute(
        "SELECT id, stale_due_at FROM entries WHERE stale_since IS NULL AND stale_due_at <= ? "
        "ORDER BY stale_due_at LIMIT ?",
        (now_ms, limit),
    ).fetchall()
    to_clear = conn.execute(
        "SELECT id, stale_due_at FROM entries WHERE stale_since IS NOT NULL AND stale_due_at > ? "
        "ORDER BY stale_due_at LIMIT ?",
        (now_ms, max(0, limit - len(to_mark))),
    ).fetchall()
    return [(i, d, True) for i, d in to_mark] + [(i, d, False) for i, d in to_clear]


def pending_count(conn: Connection, now_ms: int) -> int:
    count: int = conn.execute(
        "SELECT (SELECT COUNT(*) FROM entries WHERE stale_since IS NULL AND stale_due_at <= ?) + "
        "(SELECT COUNT(*) FROM entries WHERE stale_since IS NOT NULL AND stale_due_at > ?)",
        (now_ms, now_ms),
    ).fetchone()[0]
    return count


def run_staleness_pass(
    conn: Connection, args: StalenessPassArgs, now_ms: int
) -> StalenessPassAnswer:
    """Mark at most `limit` entries that turned stale (longest overdue first) and clear marks
    that a confirmation made wrong. Resumable (call again while `remaining` > 0) and idempotent
    (a second run right after changes nothing)."""
    marked = cleared = 0
    pending = _pending(conn, now_ms, args.limit)
    for entry_id, stale_due_at, should_be_stale in pending:
        if should_be_stale:
            _mark(conn, entry_id, stale_due_at, now_ms)
            marked += 1
        else:
            _clear(conn, entry_id, now_ms)
            cleared += 1
    return {
        "scanned": len(pending),
        "marked": marked,
        "cleared": cleared,
        "remaining": pending_count(conn, now_ms),
        "nextDueAt": next_due_at(conn),
    }


def next_due_at(conn: Connection) -> int | None:
    """When the next fresh entry turns stale (None: nothing can): lets the scheduler skip
    workspaces with nothing due instead of waking them."""
    due: int | None = conn.execute(
        "SELECT MIN(stale_due_at) FROM entries WHERE stale_since IS NULL"
    ).fetchone()[0]
    return due


def revalidate_prompt(entry: Entry) -> Revalidate:
    """One short question an agent can ask to re-confirm a stale entry."""
    text = " ".join(entry["content"].split())
    if len(text) > C.REVALIDATE_PREVIEW_CHARS:
        text = text[: C.REVALIDATE_PREVIEW_CHARS].rstrip() + "…"
    confirmed = time.strftime("%Y-%m-%d", time.gmtime(entry["updatedAt"] / 1000))
    return {
        "id": entry["id"],
        "staleSince": entry["staleSince"],
        "question": f'Last confirmed {confirmed} ({entry["volatility"]}): is this still true? "{text}"',
    }
