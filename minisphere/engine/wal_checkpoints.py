"""When a workspace's WAL is folded into its file: right after a forget (so the forgotten
entry's old pages do not stay in WAL frames), or at the next commit when a reader held the WAL
then. A file whose replicator must read every frame before a checkpoint moves it leaves every
checkpoint to that replicator."""

from __future__ import annotations

import threading
from collections.abc import Callable

from minisphere.engine import db
from minisphere.engine.constants import BUSY_TIMEOUT_MS


class WalCheckpoints:
    """The checkpoints of one workspace's writer connection (`connection()`, under `lock`)."""

    def __init__(self, lock: threading.RLock, connection: Callable[[], db.Connection]):
        self._lock = lock
        self._connection = connection
        self.owed = False  # a forget whose WAL frames are not truncated yet
        self.elsewhere = False  # see leave_to_replicator

    def after_commit(self, forgot: bool) -> None:
        """After a committed batch: fold the WAL when it holds a forget's frames (this
        batch's, or an earlier one's still owed), unless checkpoints are left elsewhere."""
        if (forgot or self.owed) and not self.elsewhere:
            self.truncate()

    def leave_to_replicator(self) -> None:
        """From now on nothing of this workspace checkpoints the WAL on its own: not SQLite at
        a commit (`wal_autocheckpoint`), not the fold after a forget or an owed one. For a file
        whose replicator must read every frame before a checkpoint moves it: a checkpoint of
        ours racing it can leave a replica that restores broken. The replicator checkpoints,
        and whoever folds a forget's WAL does it with `truncate` once the replicator has let
        go of the file."""
        with self._lock:
            self._connection().execute("PRAGMA wal_autocheckpoint = 0")
            self.elsewhere = True

    def truncate(self) -> bool:
        """Fold the WAL into the file and empty it, so a forgotten entry's old pages do not
        stay in WAL frames. Never waits for readers: when one holds the WAL it is owed to the
        next commit. True when done."""
        with self._lock:
            conn = self._connection()
            conn.execute("PRAGMA busy_timeout = 0")
            try:
                busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except db.OperationalError:
                busy = 1
            finally:
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.owed = bool(busy)
        return not busy
