"""One workspace file's registration with the node's daemon while the workspace is resident:
`confirm()` is what the group-commit writer calls after each batch in `sync` mode (one sync per
batch, never one per write), a forget (or a local history the daemon cannot go on from)
restarts the replica's history, and `lag()` shows async mode's loss window."""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from minisphere.durability.litestream_control import CONTROL_ERRORS, DaemonJson
from minisphere.durability.replication.daemon import LitestreamDaemon, daemon_environment
from minisphere.durability.replication.locations import (
    drop_local_history,
    histories_in,
    history_folder,
    history_url,
    replica_prefix,
    replica_url,
)
from minisphere.durability.stores import SnapshotStore, open_snapshot_store
from minisphere.engine.forget_ledger import REPLICA_HISTORY, ForgetLedger
from minisphere.engine.wal_checkpoints import WalCheckpoints
from minisphere.errors import ReplicationUnconfirmed
from minisphere.settings import ReplicationSettings, SnapshotSettings

log = logging.getLogger("minisphere.replication")
# Litestream's own defaults (every 1 s a sync to the replica; compaction levels of 30 s, 5 min
# and 1 h; retention of 24 h) are kept: they bound async mode's loss window (about a second)
# and how long a forgotten entry's text stays in the replica's history (the retention).
ASYNC_SYNC_INTERVAL_S = 1.0
# a sync or unregister that did not happen: the daemon is away, or it said no
NOT_DONE: tuple[type[BaseException], ...] = (*CONTROL_ERRORS, ReplicationUnconfirmed)
# a listing not read: as above, or an answer that is not JSON
NOT_LISTED: tuple[type[BaseException], ...] = (*NOT_DONE, ValueError)
# How the daemon says a sync failed on this node, reading the file or its own local copy of
# the history (both killed mid-write, a torn local file), not reaching the replica. Retrying
# cannot mend that; a fresh history does.
LOCAL_HISTORY_BROKEN = (
    "write ltx from db",
    "get database position",
    "verify ltx file",
    "cannot verify wal state",
)


class ReplicaBehind(TypedDict):
    lastSyncAt: str | None  # when the daemon last shipped (RFC 3339), if ever
    pendingTransactions: int | None  # None: the daemon cannot tell (its replica fails)
    lagSeconds: float


class ReplicaLag(ReplicaBehind):
    status: str  # "replicating" or "failing"


class ReplicaFailing(ReplicaLag):
    error: str  # why the daemon could not sync, its words cut short


class ReplicaUnseen(TypedDict):
    """The daemon does not answer, or does not list the file: no lag to tell."""

    status: str
    lastSyncAt: None


@dataclass
class WorkspaceReplica:
    """One workspace file's registration with the node's daemon. `history`: the store and key
    prefix the replica's objects live under (so a forget can restart its history)."""

    daemon: LitestreamDaemon
    db_path: Path
    url: str
    settings: ReplicationSettings
    history: tuple[SnapshotStore, str] | None = None
    history_owed: bool = False  # a forget whose old history is not deleted yet
    number: int = 0  # the history registered (or being registered): see `restart_history`
    # a restart whose new history is registered, its first upload not confirmed yet: (its
    # number, the forgets it covers); the old history stays until it is
    pending: tuple[int, int] | None = None
    # folds the WAL into the file (the open workspace's; set by its host): True when done
    checkpoint: Callable[[], bool] | None = None
    registered_at: float | None = None  # epoch seconds of the newest registration
    # the open file's record of its forgets: a restart settles the ones it covers there, so
    # a process killed halfway leaves the restart owed to whoever opens the file next
    ledger: ForgetLedger | None = None
    # one restart of the history at a time: the confirmer and a forget's answer may both ask
    _restarting: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def synchronous(self) -> bool:
        return self.settings.mode == "sync"

    @property
    def current_url(self) -> str:
        """Where the file is replicated now (its history's folder in the replica)."""
        return history_url(self.url, self.number)

    def restore_urls(self) -> list[str]:
        """Where a restore may find the file, newest history first: after a crash mid-restart
        both the old history and the new one may be there, the new one whole or not."""
        if self.history is None:
            return [self.current_url]
        store, prefix = self.history
        return [history_url(self.url, n) for n in histories_in(store.list_keys(prefix), prefix)]

    def register(self) -> None:
        # straight to the daemon, which is nearly always up: asking it first whether it answers
        # would put a round trip inside every wake; when it does not answer, it is started (or
        # waited for) and asked again. Only a process's first registration checks whose it is.
        self.daemon.ensure_owned()
        try:
            self.daemon.control.register(self.db_path, self.current_url)
        except CONTROL_ERRORS:
            self.daemon.ensure_running().register(self.db_path, self.current_url)
        self.registered_at = time.time()

    def attach(self, checkpoints: WalCheckpoints, ledger: ForgetLedger) -> None:
        """Hand a file just opened to the daemon. Litestream checkpoints a replicated file
        itself, after it has read the frames: SQLite's own checkpoint at a commit raced it
        under a heavy write load, and a node killed then left a replica that restored to a
        broken file (an index not matching its table); Litestream's guidance for busy writers
        is the same. A forget's WAL is folded by the restart of the history, unregistered."""
        checkpoints.leave_to_replicator()
        self.checkpoint = checkpoints.truncate
        self.ledger = ledger
        recorded = ledger.history()
        if recorded < self.number:
            # a file restored in place (a snapshot version, a moment) from before this history
            # began: it goes on in the history it replaces, and says so before it is shipped,
            # or a later restore would take the newer history for its own and skip the file
            ledger.settle(REPLICA_HISTORY, 0, history=self.number)
        self.number = max(recorded, self.number)
        if ledger.owed(REPLICA_HISTORY):
            # a forget whose process died before the history started over: nothing is
            # served (nor restored to a moment) from the old history first
            log.warning(
                "replica of %s: a forget's restart of its history is owed; done "
                "before the file opens",
                self.db_path.parent.name,
            )
            self.restart_history()
            return
        try:
            self.register()
        except Exception as exc:  # noqa: BLE001 - sync writes re-register and say so
            log.warning("replica of %s: not registered yet: %r", self.db_path.parent.name, exc)

    def confirm(self) -> DaemonJson:
        """Block until what is committed is on the replica (sync mode: after every batch).
        A daemon that is gone is started again and the file registered anew; a replica that
        cannot confirm within the bound raises `ReplicationUnconfirmed`. Then a restart of the
        history still owed (or under way) is tried: what was committed is on the registered
        history first, whichever it is, and the old one is deleted only once the new one
        holds the file."""
        try:
            answer = self._sync()
        except NOT_DONE as exc:
            log.warning(
                "replication of %s not confirmed (%s); registering again", self.db_path, exc
            )
            try:
                self.register()
                answer = self._sync()
            except CONTROL_ERRORS as exc:
                raise ReplicationUnconfirmed(
                    f"replication of {self.db_path.parent.name} not confirmed: "
                    f"{exc.__class__.__name__}"
                ) from None
        if self.history_owed:
            self.restart_history()
        return answer

    def _sync(self) -> DaemonJson:
        """One sync; when the daemon cannot go on from its local history, the history starts
        over first (a retry alone would fail the same way for good)."""
        try:
            return self.daemon.control.sync(self.db_path, self.settings.sync_timeout_s)
        except ReplicationUnconfirmed as exc:
            if not any(words in str(exc) for words in LOCAL_HISTORY_BROKEN):
                raise
            log.error(
                "replication of %s: the daemon cannot go on from its local history "
                "(%s); the replica's history starts over",
                self.db_path,
                exc,
            )
        self.restart_history(owed_only=False)
        return self.daemon.control.sync(self.db_path, self.settings.sync_timeout_s)

    def restart_history(self, *, owed_only: bool = True) -> bool:
        """After a forget: the replica's history (and the daemon's local copy of it) holds the
        forgotten text in the pages of earlier transactions. Make before break: the file is
        registered on a new history (the next number, a folder beside the old one in the
        replica) starting from a snapshot of the file as it is now; once that history's first
        upload is confirmed, every other history is deleted and the file records the new one
        as its own, in the transaction that settles the forgets it covers. Until then the old
        history stays, so the replica always holds the file: a node lost meanwhile restores
        from the newest history that restores (`restore_urls`). Points in time before the
        forget can no longer be restored. True once done; else it is owed, and retried after
        the next confirmation (the new history's upload goes on meanwhile: a restart begun
        again at each confirmation would delete a large file's first upload every time).

        One restart at a time: a caller that waited for another's restarts only what is still
        owed (`owed_only`; a history the daemon cannot go on from is restarted regardless)."""
        with self._restarting:
            if not owed_only:
                self.pending = None
            elif not self._restart_owed():
                return True
            self.history_owed = True
            if self.pending is None and not self._begin_history():
                return False
            return self._finish_history()

    def _begin_history(self) -> bool:
        """Register the file on the next history (False: not begun, the old one kept)."""
        covers = self.ledger.forgets()[0] if self.ledger is not None else 0
        target = self.number + 1
        with contextlib.suppress(*CONTROL_ERRORS, ReplicationUnconfirmed):
            self.daemon.control.unregister(self.db_path)
        try:
            # the daemon holds a read transaction on a file it replicates, so the engine's own
            # checkpoint after the forget could not fold the WAL into the file (the old pages
            # stay there until it does): now, unregistered, it can
            if self.checkpoint is not None and not self.checkpoint():
                raise ReplicationUnconfirmed("the WAL is still held by a reader")
            if self.history is not None:  # what a restart killed halfway left there
                store, prefix = self.history
                for key in store.list_keys(prefix + history_folder(target)):
                    store.delete(key)
        except Exception as exc:  # noqa: BLE001 - owed, retried; never fails the forget itself
            log.error(
                "replica history of %s still holds forgotten text (%s); retried after the "
                "next confirmation",
                self.db_path.parent.name,
                exc,
            )
            with contextlib.suppress(Exception):
                self.register()  # the old history goes on meanwhile
            return False
        drop_local_history(self.db_path)  # of the old history: the new one starts afresh
        self.number, self.pending = target, (target, covers)
        try:
            self.register()
        except Exception as exc:  # noqa: BLE001 - the next confirmation registers it
            log.warning("replica of %s: new history not registered yet: %r", self.db_path, exc)
            return False
        return True

    def _finish_history(self) -> bool:
        """Once the new history holds the file: every other history deleted, the file told."""
        assert self.pending is not None
        target, covers = self.pending
        try:
            self.daemon.control.sync(self.db_path, self.settings.sync_timeout_s)
            if self.history is not None:
                store, prefix = self.history
                kept = prefix + history_folder(target)
                for key in store.list_keys(prefix):
                    if not key.startswith(kept):
                        store.delete(key)
        except Exception as exc:  # noqa: BLE001 - the upload goes on; finished later
            log.warning(
                "replica of %s: the new history is not confirmed yet, the old one is kept (%r)",
                self.db_path.parent.name,
                exc,
            )
            return False
        self.pending = None
        self._settle(covers, target)
        # a forget committed after this restart began is in the new history: it owes another
        self.history_owed = False
        if self.ledger is not None:
            self.history_owed = self._restart_owed()
        return True

    def _restart_owed(self) -> bool:
        if self.history_owed:
            return True
        if self.ledger is None:  # nothing says what the history covers: restart
            return True
        try:
            return self.ledger.owed(REPLICA_HISTORY) > 0
        except Exception:  # noqa: BLE001 - the file unreadable: restarting is the safe side
            return True

    def _settle(self, forgets: int, history: int) -> None:
        if self.ledger is None:
            return
        try:
            self.ledger.settle(REPLICA_HISTORY, forgets, history=history)
        except Exception as exc:  # noqa: BLE001 - left owed: the next open restarts once more
            log.warning(
                "replica of %s: its restart not recorded in the file (%r)",
                self.db_path.parent.name,
                exc,
            )

    def lag(self) -> ReplicaLag | ReplicaFailing | ReplicaUnseen:
        """How far the replica is behind the file (async mode's loss window, shown):
        `pendingTransactions` committed here and not yet on the replica (None when the daemon
        cannot tell: its replica is failing), and `lagSeconds`, how long since the daemon last
        shipped while some are pending (0 when none is)."""
        try:
            listed = next(
                (
                    database
                    for database in self.daemon.control.databases()
                    if database.get("path") == str(self.db_path)
                ),
                None,
            )
        except NOT_LISTED:
            return {"status": "daemon not answering", "lastSyncAt": None}
        if listed is None:
            return {"status": "unregistered", "lastSyncAt": None}
        shipped: str | None = listed.get("last_sync_at")
        try:
            # without `wait` a sync only hands the new frames to the daemon and says how far
            # the replica is: what a reader of this status would want shipped anyway
            progress = self.daemon.control.nudge(self.db_path)
        except NOT_DONE as exc:
            return {**self._behind(shipped, None), "status": "failing", "error": str(exc)[:300]}
        pending = max(0, int(progress.get("txid") or 0) - int(progress.get("replicated_txid") or 0))
        return {**self._behind(shipped, pending), "status": "replicating"}

    def _behind(self, shipped: str | None, pending: int | None) -> ReplicaBehind:
        behind = 0.0
        if pending is None or pending:  # since the last shipment, or registering if none yet
            since = parse_litestream_time(shipped) if shipped else self.registered_at
            behind = max(0.0, time.time() - (since or time.time()))
        return {
            "lastSyncAt": shipped,
            "pendingTransactions": pending,
            "lagSeconds": round(behind, 3),
        }

    def ship_last(self) -> None:
        """The final sync, while the file is still open (so is the daemon's connection to it
        once synced). A restart of the history still owed (a forget's) is done first:
        unregistered, the file would keep the forgotten text in the replica's history."""
        if self.history_owed:
            self.restart_history()
        self.daemon.control.sync(self.db_path, self.settings.sync_timeout_s)

    def unregister(self) -> None:
        """Stop replicating the file (a daemon that is away has let go of it already)."""
        with contextlib.suppress(*CONTROL_ERRORS, ReplicationUnconfirmed):
            self.daemon.control.unregister(self.db_path)


def parse_litestream_time(text: str) -> float:
    """Epoch seconds of the daemon's RFC 3339 times ("2026-12-02T09:36:07.475827842Z": Go
    prints nanoseconds, which Python's parser does not take)."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    moment = dt.datetime.fromisoformat(whole).replace(tzinfo=dt.UTC)
    return moment.timestamp() + float(f"0.{fraction or 0}")


def workspace_replica(
    replication: ReplicationSettings,
    snapshots: SnapshotSettings | None,
    db_path: str | Path,
    workspace_id: str,
    generation: str | None,
    owner_pid: int | None = None,
) -> WorkspaceReplica | None:
    """The replication of one workspace file as the settings ask (None: off, or no store).
    `owner_pid`: the process the node's daemon must not outlive (the node's raylet)."""
    if not replication.enabled or snapshots is None:
        return None
    daemon = LitestreamDaemon(replication.daemon_dir, daemon_environment(snapshots), owner_pid)
    return WorkspaceReplica(
        daemon,
        Path(db_path).resolve(),
        replica_url(snapshots, workspace_id, generation),
        replication,
        (open_snapshot_store(snapshots), replica_prefix(workspace_id, generation)),
    )
