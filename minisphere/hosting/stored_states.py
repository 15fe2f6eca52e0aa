"""A workspace host's stored states: its snapshots (take, list, prune, and the snapshotter that
takes them on schedule), the two restores, to a named snapshot version and to any second the
replica holds, and what a forget does to those stored copies. Both restores replace the live
file, so both go through `_file_swap` (snapshots paused, the live file let go of by the host
that holds it open, reopened after).

`WorkspaceHost` (host.py) owns one, and is the `LiveFile` it swaps.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from minisphere.durability.replication.registration import WorkspaceReplica
from minisphere.durability.replication.restore import restore_moment
from minisphere.durability.restores import SnapshotRestore, restore_snapshot
from minisphere.durability.snapshots.layout import list_versions, version_taken_ms
from minisphere.durability.snapshots.manifest import list_snapshots
from minisphere.durability.snapshots.pruning import delete_version, prune
from minisphere.durability.snapshots.publish import take_snapshot
from minisphere.durability.snapshotter import Snapshotter
from minisphere.durability.stores import SnapshotStore
from minisphere.engine.clock import epoch_ms
from minisphere.engine.forget_ledger import REPLICA_HISTORY, SNAPSHOT_VERSIONS, ForgetLedger
from minisphere.engine.location import inspect_copy
from minisphere.engine.workspace import Workspace
from minisphere.errors import InvalidArgument, ReplicationUnconfirmed, SnapshotError
from minisphere.hosting.copies import drop_after_forget
from minisphere.settings import SnapshotSettings
from minisphere.wire.residency import SnapshotStatus
from minisphere.wire.stored_states import Pruned, RestoredToMoment, SnapshotManifest

log = logging.getLogger("minisphere.host")


class LiveFile(Protocol):
    """What the stored states need of the host that holds the workspace's file open."""

    workspace: Workspace | None  # the open file (None while closed)
    min_position: int  # no state below it was ever acknowledged

    def let_go_of_file(self) -> None:
        """Drain the writer, release the replica, close every connection."""

    def reopen_file(self) -> None:
        """Open the (replaced) file again; a failure is retried by the next call."""


class StoredStates:
    def __init__(
        self,
        workspace_id: str,
        path: Path,
        store: SnapshotStore | None,
        replica: WorkspaceReplica | None,
        live: LiveFile,
        snapshots: SnapshotSettings,
        on_snapshot_status: Callable[[SnapshotStatus], None] | None = None,
    ):
        self.workspace_id = workspace_id
        self.path = path
        self.store = store
        self.replica = replica
        self.live = live
        self.keep = snapshots.keep
        self.snapshotter = Snapshotter(
            self._take,
            purge=self._drop_versions_before_forgets,
            every_writes=snapshots.every_writes,
            every_s=snapshots.every_s,
            name=workspace_id,
            on_status=on_snapshot_status,
        )

    # ---- snapshots -----------------------------------------------------------------------------
    def _require_store(self) -> SnapshotStore:
        if self.store is None:
            raise SnapshotError("no snapshot store is configured")
        return self.store

    def _take(self, reason: str) -> SnapshotManifest:
        return take_snapshot(
            self.path, self._require_store(), self.workspace_id, reason=reason, keep=self.keep
        )

    def snapshot_now(self, reason: str = "manual") -> SnapshotManifest:
        self._require_store()
        return self.snapshotter.snapshot_now(reason)

    def before_closing(self, replicated: bool) -> tuple[SnapshotManifest | None, str | None]:
        """At hibernation: a snapshot if anything changed (unless the store is backing off, or
        the replica confirmed the last write and no named version is due yet), then the purge
        a forget owes. Returns (the manifest taken or None, what went wrong or None)."""
        manifest, error = None, None
        status = self.snapshotter.status()
        if status["pendingWrites"] > 0 and self.store is not None:
            if replicated and status["lastSnapshotAt"] is not None and not self.snapshotter.due():
                # the replica holds every write, so a copy of the whole file adds nothing a
                # restore needs; the named versions keep their own schedule (carried over to
                # the next residency), and those writes stay counted as pending until then
                pass
            elif status["consecutiveFailures"] and status["retryInS"]:
                error = f"snapshot store backing off: {status['lastFailure']}"
            else:
                try:
                    manifest = self.snapshotter.snapshot_now("hibernate")
                except SnapshotError as exc:
                    error = exc.message
        if self.store is not None and error is None:
            try:  # a forget's text must not wait in older versions
                self.snapshotter.purge_owed()
            except SnapshotError as exc:
                error = f"versions from before a forget not deleted: {exc.message}"
        return manifest, error

    def prune_snapshots(self, keep: int) -> Pruned:
        """Keep only the newest `keep` versions, after making sure the newest one is the file
        as it is now (a snapshot is taken first when anything changed). By hand, more than
        what a forget does by itself (`drop_versions_before`)."""
        if keep < 1:
            raise InvalidArgument("keep must be at least 1 (the current state)")
        store = self._require_store()
        taken = None
        if self.snapshotter.pending_writes > 0 or not list_versions(store, self.workspace_id):
            taken = self.snapshotter.snapshot_now("prune")
        with self.snapshotter.paused():
            deleted = prune(store, self.workspace_id, keep)
        drop_after_forget(self.path)  # asides are older versions kept on the node
        return {
            "workspace": self.workspace_id,
            "snapshot": taken,
            "deleted": deleted,
            "kept": list_versions(store, self.workspace_id),
        }

    def drop_versions_before(self, forgotten_at_ms: int) -> list[str]:
        """After a forget: every version taken before `forgotten_at_ms` may hold its text, so
        they go, once a version of the file as it is now is stored (taken unless one taken
        since the forget exists). Versions taken after it stay. Returns those deleted."""
        store = self._require_store()
        versions = list_versions(store, self.workspace_id)
        older = [v for v in versions if version_taken_ms(v) < forgotten_at_ms]
        if not older:
            return []
        if len(older) == len(versions):
            self.snapshotter.snapshot_now("forget")
        with self.snapshotter.paused():
            for version in older:
                delete_version(store, self.workspace_id, version)
        log.info(
            "workspace %s: %d snapshot versions from before a forget deleted",
            self.workspace_id,
            len(older),
        )
        return older

    def attach(self, ledger: ForgetLedger) -> None:
        """A file just opened: a purge its forgets still owe (their process died before the
        versions older than them were deleted) is owed again, to the snapshotter."""
        if self.store is not None and ledger.owed(SNAPSHOT_VERSIONS):
            self.snapshotter.owe_purge(ledger.forgets()[1])

    def cleanup_owed(self, ledger: ForgetLedger) -> bool:
        """A forget's clean-up outside the file still owed as the workspace closes: the
        replica's history not started over, or snapshot versions from before it not deleted
        (the store was down). The directory then wakes the workspace later to pay it."""
        try:
            history = self.replica is not None and (
                self.replica.history_owed or ledger.owed(REPLICA_HISTORY) > 0
            )
            versions = self.store is not None and (
                self.snapshotter.purge_is_owed or ledger.owed(SNAPSHOT_VERSIONS) > 0
            )
        except Exception:  # noqa: BLE001 - the file unreadable: owing is the safe answer
            return True
        return history or versions

    def _drop_versions_before_forgets(self, forgotten_at_ms: int) -> list[str]:
        """The snapshotter's owed purge: the versions from before the newest forget the file
        records (at least `forgotten_at_ms`), then the file says its forgets are settled."""
        workspace = self.live.workspace
        if workspace is None:  # closed meanwhile: owed to the next open
            return self.drop_versions_before(forgotten_at_ms)
        forgets, newest_ms = workspace.forget_ledger.forgets()
        dropped = self.drop_versions_before(max(forgotten_at_ms, newest_ms))
        workspace.forget_ledger.settle(SNAPSHOT_VERSIONS, forgets)
        return dropped

    def after_forget(self) -> None:
        """After a forget committed: the copies beside the file and the replica's history were
        taken before it. A failure is logged and owed; in sync mode a replica history not
        started over yet raises `ReplicationUnconfirmed` (`confirm_forgotten`)."""
        try:
            drop_after_forget(self.path)
        except OSError as exc:
            log.error(
                "workspace %s: copies from before a forget not deleted: %r", self.workspace_id, exc
            )
        if self.store is not None:  # the snapshotter's thread drops the older versions
            self.snapshotter.owe_purge(epoch_ms())
        if self.replica is None:
            return
        if self.replica.synchronous:
            self.confirm_forgotten()  # on the confirmer thread, before the answer
        else:
            # async answers at the commit: the confirmer restarts the history right after,
            # not the writer thread inside the forget's answer
            self.replica.history_owed = True

    def confirm_forgotten(self) -> None:
        """Sync mode: a forget is answered once the replica holds the file on a history without
        the forgotten text (a new history confirmed, the old one deleted); else
        `ReplicationUnconfirmed` (503), and the same forget sent again with its key asks again."""
        replica = self.replica
        if replica is not None and replica.synchronous and not replica.restart_history():
            raise ReplicationUnconfirmed(
                f"the forget is committed, but the replica of {self.workspace_id} still "
                "holds its text in an older history; send it again with the same key"
            )

    def list_snapshots(self) -> list[SnapshotManifest]:
        return list_snapshots(self._require_store(), self.workspace_id)

    def restore(self, version: str | None) -> SnapshotRestore:
        """Point-in-time restore: with snapshots paused, close, publish the verified version
        again as the newest one (so a later activation from the store, or a restore without a
        version, comes back to it and not to the state it replaced), swap it in and reopen
        (even on error; a reopen that fails is retried by the next call, see `ensure_open`)."""
        store = self._require_store()
        with self._file_swap():
            result = restore_snapshot(
                store,
                self.workspace_id,
                self.path,
                version,
                publish=True,
                keep=self.keep,
                new_position=self._position_after_restore(),
            )
        self.snapshotter.mark_clean(result["published"])
        self._confirm_replicated()
        return result

    def restore_to_time(self, moment: str) -> RestoredToMoment:
        """Restore the state the replica held at `moment` (RFC 3339, UTC): any second within
        the replica's retention, where snapshots give only their versions. The restored state
        is a new state (a new position) and the next snapshot stores it."""
        if self.replica is None:
            raise InvalidArgument(
                "restoring to a moment needs continuous replication "
                "(MINISPHERE_REPLICATION=sync or async); restore a snapshot "
                "version instead"
            )
        with self._file_swap():
            result = restore_moment(
                self.replica.current_url,
                self.path,
                moment,
                self._position_after_restore(),
                self.replica.daemon.env,
            )
        self.snapshotter.note_writes(1)
        self._confirm_replicated()
        return {
            "workspace": self.workspace_id,
            "moment": result["moment"],
            "position": result["position"],
            "aside": result["aside"],
        }

    def _confirm_replicated(self) -> None:
        """In `sync` mode a restore is answered like a write: once the restored state is on the
        replica. Else a wake elsewhere, or a restore to a moment after this answer, would find
        the replaced state there. `ReplicationUnconfirmed` (503) when it cannot be confirmed:
        the restore is done, and sending it again restores the same state."""
        if self.replica is not None and self.replica.synchronous:
            self.replica.confirm()

    @contextmanager
    def _file_swap(self) -> Iterator[None]:
        """While the live file is replaced: snapshots paused, replication let go of the file
        (the daemon must not follow it through the swap: re-registered, it ships the new state),
        every connection closed; reopened afterwards, even on error (a reopen that fails is
        retried by the next call, see `ensure_open`)."""
        with self.snapshotter.paused():
            self.live.let_go_of_file()
            try:
                yield
            finally:
                self.live.reopen_file()

    def _position_after_restore(self) -> int:
        """A restore is a new state: above the live copy's and every acknowledged position."""
        live = inspect_copy(self.path)
        return max(self.live.min_position, live.position if live else 0) + 1
