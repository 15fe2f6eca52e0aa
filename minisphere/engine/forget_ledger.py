"""What the forgets of a workspace still owe outside its file, written in the file itself.

A forget deletes the entry in the file at once, but older copies of its text live elsewhere
until someone deletes them: the replica's history and the snapshot versions taken before it.
Those deletions run after the forget commits, and a process killed before they finish would
forget that they are owed. So the forget's own transaction counts it here, and whoever deletes
the copies of one kind says how many forgets that covers (`settle`). Whoever opens the file
next, on any node, sees what is still owed (`owed`) before it serves anything.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager

from minisphere.engine import db

FORGETS_KEY = "forget.count"  # forgets committed in this file, ever
LAST_FORGET_MS_KEY = "forget.lastAtMs"  # when the newest one committed (epoch ms)
# what a kind of copy has been cleaned for: the forget count its last clean-up covered
REPLICA_HISTORY = "forget.settled.replicaHistory"
SNAPSHOT_VERSIONS = "forget.settled.snapshotVersions"
SETTLED_KINDS = (REPLICA_HISTORY, SNAPSHOT_VERSIONS)
# which of the replica's histories the file goes to: a restart of the history (after a forget)
# starts the next one beside the old, which is deleted once the new one holds the file
HISTORY_NUMBER_KEY = "replica.history"


def _read_int(conn: db.Connection, key: str) -> int:
    try:
        value = db.read_meta(conn, key)
    except db.OperationalError:  # a file from before workspace_meta
        return 0
    return int(value) if value is not None else 0


def _write_int(conn: db.Connection, key: str, value: int) -> None:
    db.write_meta(conn, key, str(int(value)))


def record_forget(conn: db.Connection, now_ms: int) -> None:
    """Inside the forget's transaction: one more forget whose copies are owed."""
    _write_int(conn, FORGETS_KEY, _read_int(conn, FORGETS_KEY) + 1)
    _write_int(conn, LAST_FORGET_MS_KEY, now_ms)


class ForgetLedger:
    """The ledger of one open workspace file: read on its writer `connection()` under `lock`,
    settled in its fenced write `transaction()` (an owner fenced out settles nothing)."""

    def __init__(
        self,
        lock: threading.RLock,
        connection: Callable[[], db.Connection],
        transaction: Callable[[], AbstractContextManager[db.Connection]],
    ):
        self._lock = lock
        self._connection = connection
        self._transaction = transaction

    def forgets(self) -> tuple[int, int]:
        """(forgets committed, when the newest one committed in epoch ms; 0 if none)."""
        with self._lock:
            conn = self._connection()
            return _read_int(conn, FORGETS_KEY), _read_int(conn, LAST_FORGET_MS_KEY)

    def owed(self, kind: str) -> int:
        """Forgets whose copies of this kind may still exist (0: none)."""
        with self._lock:
            conn = self._connection()
            return max(0, _read_int(conn, FORGETS_KEY) - _read_int(conn, kind))

    def settle(self, kind: str, forgets: int, history: int | None = None) -> None:
        """The copies of this kind hold nothing of the first `forgets` forgets any more;
        `history`: the replica's history the file goes to from now on (same transaction)."""
        if kind not in SETTLED_KINDS:
            raise ValueError(f"unknown kind of copy: {kind}")
        with self._lock:
            conn = self._connection()
            same_history = history is None or _read_int(conn, HISTORY_NUMBER_KEY) == history
            if _read_int(conn, kind) >= forgets and same_history:
                return
            with self._transaction() as conn:
                # never past the file's own count: a file restored from before some forgets
                # counts its next ones again, and they must show as owed
                count = _read_int(conn, FORGETS_KEY)
                _write_int(conn, kind, min(count, max(forgets, _read_int(conn, kind))))
                if history is not None:
                    _write_int(conn, HISTORY_NUMBER_KEY, history)

    def history(self) -> int:
        """The replica's history the file goes to (0: the first, begun before any forget)."""
        with self._lock:
            return _read_int(self._connection(), HISTORY_NUMBER_KEY)
