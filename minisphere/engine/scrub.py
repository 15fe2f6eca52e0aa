"""Keeping a forgotten entry's text out of every page of its workspace file.

secure_delete zeroes the bytes a delete removes, and on the engine's write connection it also
zeroes each page SQLite reuses or rebuilds. A file built by a connection without it (a snapshot
taken before snapshots set it, and every file restored from one) can hold old copies of rows in
the free gaps of pages that rows were moved out of while a b-tree was rebalanced: no delete
reaches those copies. Such a file is rewritten (VACUUM) at its first forget; a file known to
be built clean says so in `workspace_meta` and is never rewritten for a forget.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from minisphere.engine import db

log = logging.getLogger("minisphere.workspace")

CLEAN_KEY = "file.builtClean"  # present: every page was written with secure_delete on


def built_clean(conn: db.Connection) -> bool:
    try:
        return db.read_meta(conn, CLEAN_KEY) is not None
    except db.OperationalError:  # a file from before workspace_meta
        return False


def mark_built_clean(conn: db.Connection) -> None:
    db.write_meta(conn, CLEAN_KEY, "1")


def rewrite_clean(conn: db.Connection) -> None:
    """VACUUM (the connection's secure_delete carries over to the rebuilt file), then say so.
    Raises `db.OperationalError` when a statement of this connection still runs."""
    conn.execute("VACUUM")
    mark_built_clean(conn)


class ForgetRewrites:
    """The rewrites of one workspace's file after its forgets (writer `connection()`, under
    `lock`): owed to the next commit when one cannot run at once."""

    def __init__(self, lock: threading.RLock, connection: Callable[[], db.Connection], path: Path):
        self._lock = lock
        self._connection = connection
        self._path = path
        self.owed = False

    def after_commit(self, forgot: bool) -> None:
        if not (forgot or self.owed):
            return
        with self._lock:
            conn = self._connection()
            try:
                if not built_clean(conn):
                    rewrite_clean(conn)
                self.owed = False
            except db.OperationalError as exc:
                log.warning(
                    "rewrite of %s after a forget owed to the next write: %s", self._path, exc
                )
                self.owed = True
