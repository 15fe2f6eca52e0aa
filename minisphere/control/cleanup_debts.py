"""Forgets whose clean-up outside the workspace's file was still unpaid when it hibernated.

A forget deletes its text in the file at once and then, outside it, the replica's history and
the snapshot versions taken before it. When the store is down, that clean-up stays owed, and
the file's own ledger makes the next open pay it; a workspace nobody wakes would keep the text
in the store indefinitely. So the hibernation's report says it still owes, the debt is recorded
here, and the directory wakes the workspace to pay it when it is due, each failure pushing the
next try further out (doubling, up to an hour). A hibernation that owes nothing settles it.
"""

from __future__ import annotations

from sqlite3 import Connection
from typing import TypedDict

from minisphere.control.locations import Audit
from minisphere.engine.clock import epoch_ms

CLEANUP_RETRY_FIRST_S = 30.0  # after the hibernation that left it unpaid
CLEANUP_RETRY_MAX_S = 3600.0  # the back-off's ceiling: a store down for days is tried hourly


class CleanupDebt(TypedDict):
    since: int  # epoch ms of the first hibernation that left it unpaid
    attempts: int  # hibernations (and wakes) that did not pay it
    nextAt: int  # epoch ms: when the directory wakes the workspace for it
    lastError: str | None


def retry_after_s(attempts: int) -> float:
    """The wait before the next try after `attempts` unpaid ones: 30 s, 60 s, ... 1 h."""
    return min(CLEANUP_RETRY_MAX_S, CLEANUP_RETRY_FIRST_S * 2.0 ** max(0, attempts - 1))


class CleanupDebts:
    def __init__(self, conn: Connection, audit: Audit):
        self.conn = conn
        self._audit = audit

    def note(self, workspace_id: str, owed: bool, error: str | None = None) -> None:
        """What a hibernation (or a failed wake for the debt) said: still owed, or paid."""
        if not owed:
            if self.conn.execute(
                "DELETE FROM cleanup_debts WHERE workspace_id = ?", (workspace_id,)
            ).rowcount:
                self._audit(workspace_id, "forget-cleanup-paid", None)
            return
        now = epoch_ms()
        known = self.get(workspace_id)
        attempts = known["attempts"] + 1 if known else 1
        next_at = now + int(retry_after_s(attempts) * 1000)
        self.conn.execute(
            "INSERT INTO cleanup_debts(workspace_id, since, attempts, next_at, last_error) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT(workspace_id) DO UPDATE SET "
            "attempts = excluded.attempts, next_at = excluded.next_at, "
            "last_error = excluded.last_error",
            (workspace_id, now, attempts, next_at, error),
        )
        if known is None:
            self._audit(workspace_id, "forget-cleanup-owed", {"error": error})

    def get(self, workspace_id: str) -> CleanupDebt | None:
        row = self.conn.execute(
            "SELECT since, attempts, next_at, last_error FROM cleanup_debts WHERE workspace_id = ?",
            (workspace_id,),
        ).fetchone()
        if row is None:
            return None
        since, attempts, next_at, error = row
        return {"since": since, "attempts": attempts, "nextAt": next_at, "lastError": error}

    def due(self, limit: int, now_ms: int | None = None) -> list[str]:
        """Workspaces whose debt is due now, the longest-waiting first (at most `limit`)."""
        rows = self.conn.execute(
            "SELECT workspace_id FROM cleanup_debts WHERE next_at <= ? ORDER BY next_at LIMIT ?",
            (epoch_ms() if now_ms is None else now_ms, limit),
        )
        return [workspace_id for (workspace_id,) in rows]

    def count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM cleanup_debts").fetchone()[0])

    def drop(self, workspace_id: str) -> None:
        """The workspace was deleted: its copies went with it."""
        self.conn.execute("DELETE FROM cleanup_debts WHERE workspace_id = ?", (workspace_id,))
