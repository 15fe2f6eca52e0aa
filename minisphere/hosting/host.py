"""One workspace's file with everything around it: the group-commit writer, the read pool and
the snapshotter. Plain Python; the workspace actor is a thin async shell around it.

Lifecycle: `WorkspaceHost(...)` makes sure the file is there (restoring the newest good
snapshot when it is missing, e.g. on a new node) and opens it; the restores (stored_states.py)
swap another state in and reopen; `hibernate()` drains the writer, takes a snapshot when
anything changed since the last one (skipped, and reported as pending, while the store is
backing off after a failure), and closes. Callers must not submit while `restore` or
`hibernate` runs (the actor holds its admission closed).

One write path: every write goes through the group-commit writer. A write the workspace's
hooks take part in (a capture on a vector-bound file) is first prepared on a read-pool thread
(`prepare_write`: the embedding happens there, outside any transaction and lock) and then
queued with its prepared value.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from minisphere.durability.generations import generation_store
from minisphere.durability.replication.registration import ASYNC_SYNC_INTERVAL_S, WorkspaceReplica
from minisphere.durability.stores import SnapshotStore
from minisphere.engine.embedding.base import EmbeddingProvider
from minisphere.engine.location import inspect_copy
from minisphere.engine.workspace import Workspace
from minisphere.errors import (
    WorkspaceClosed,
    WorkspaceDataMissing,
    WorkspaceUnavailable,
)
from minisphere.hosting.at_rest import altered_since_sealed, seal, unseal
from minisphere.hosting.copies import HostLock, drop_staging_leftovers
from minisphere.hosting.group_commit import GroupCommitWriter
from minisphere.hosting.host_calls import HostCalls
from minisphere.hosting.host_options import (
    DEFAULT_TUNING,
    NO_LISTENERS,
    NOTHING_KNOWN,
    HostListeners,
    HostTuning,
    KnownState,
)
from minisphere.hosting.lag_readings import LagReadings
from minisphere.hosting.locating import CurrentCopy
from minisphere.hosting.open_file import OpenFile
from minisphere.hosting.read_pool import ReadPool
from minisphere.hosting.stored_states import StoredStates
from minisphere.wire.residency import Activation, HostHibernation

log = logging.getLogger("minisphere.host")


def _claimed(
    workspace: Workspace,
    read_pool: Callable[[Workspace], ReadPool],
    generation: str | None,
    epoch: int | None,
    replicated: bool = False,
) -> ReadPool:
    """The readers of a file just opened, once the file is claimed by `epoch` (refused if a
    newer owner did; expired idempotency keys pruned either way). On any failure the file and
    its readers are closed again."""
    try:
        reads = read_pool(workspace)
    except BaseException:
        workspace.close()
        raise
    try:
        if replicated:
            # before the claim commits: a WAL left by a process that ended may be past
            # SQLite's own checkpoint threshold, and that checkpoint is the replicator's
            workspace.checkpoints.leave_to_replicator()
        if epoch is not None:
            workspace.claim(generation, epoch)
        else:
            workspace.prune_expired_keys()
    except BaseException:
        reads.close()
        workspace.close()
        raise
    return reads


class WorkspaceHost:
    def __init__(
        self,
        workspace_id: str,
        path: str | Path,
        *,
        store: SnapshotStore | None = None,
        replica: WorkspaceReplica | None = None,
        embedder: EmbeddingProvider | None = None,
        known: KnownState = NOTHING_KNOWN,
        tuning: HostTuning = DEFAULT_TUNING,
        listeners: HostListeners = NO_LISTENERS,
    ):
        self.workspace_id = workspace_id
        self.path = Path(path)
        generation = known.generation
        self.generation, self.epoch, self.min_position = generation, known.epoch, known.position
        self.replica = replica  # continuous replication (durability/replication/)
        self._lag_readings = LagReadings(replica.lag if replica is not None else dict, workspace_id)
        self.on_durable = listeners.on_durable  # told when the replica is known to hold more
        # only this creation of the id's snapshots (durability/generations.py)
        self.store = (
            generation_store(store, workspace_id, generation) if store is not None else None
        )
        self.synchronous, self.max_batch = tuning.synchronous, tuning.max_batch
        self.read_threads = tuning.read_threads
        self.embedder = embedder  # the vector binding's provider, if any
        self.calls = HostCalls(self)
        self.on_follow_up = listeners.on_follow_up or self.calls.follow_up  # (recall counts)
        self.workspace: Workspace | None = None
        # its snapshots, restores, and what a forget does to them
        self.states = StoredStates(
            workspace_id,
            self.path,
            self.store,
            replica,
            self,
            tuning.snapshots,
            listeners.on_snapshot_status,
        )
        self.snapshotter = self.states.snapshotter
        self.snapshotter.resume_schedule(known.last_snapshot_at)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.writer: GroupCommitWriter | None = None
        self.reads: ReadPool | None = None
        self._closed = False  # closed for good (hibernated or closed)
        # a thread of this workspace (writer, confirmer, snapshotter) outlived its close: the
        # process must not serve another workspace
        self.threads_left = False
        self._lock = HostLock(self.path.parent)  # the node's sweep leaves this folder alone
        try:
            self._activate(known)
        except BaseException:
            self._lock.release()
            raise
        if tuning.background and store is not None:
            self.snapshotter.start()

    def _activate(self, known: KnownState) -> None:
        """Make sure the right copy of the file is here (restored when missing or behind; how it
        was found is `activation`), and open it."""
        drop_staging_leftovers(self.path.parent)  # of a killed earlier host's restore
        self.activation: Activation = CurrentCopy(
            self.workspace_id,
            self.path,
            self.generation,
            self.min_position,
            self.store,
            self.replica,
            copy_may_be_behind=known.moved_here,
            altered_at_rest=altered_since_sealed(self.path),  # before anything opens it
        ).ensure(known.expect_snapshot)
        if known.pending_writes or self.activation["source"] == "new":
            self.snapshotter.note_writes(max(1, known.pending_writes))
        self._open()
        unseal(self.path)

    # ---- file and connections ------------------------------------------------------------------
    def _open(self) -> None:
        if self.activation["source"] != "new" and not self.path.exists():
            # opening would make an empty database where a copy was found: never that
            raise WorkspaceDataMissing(
                f"workspace {self.workspace_id}: its file at "
                f"{self.path} is gone; nothing was opened"
            )
        # the blueprint's embedder: a file bound to another (a rebind cut short) is re-embedded
        workspace = Workspace(
            self.path, synchronous=self.synchronous, embedder=self.embedder, reembed_other=True
        )
        reads = _claimed(
            workspace, self._read_pool, self.generation, self.epoch, self.replica is not None
        )
        self.workspace, self.reads = workspace, reads
        confirm = None
        if self.replica is not None:
            self.replica.attach(workspace.checkpoints, workspace.forget_ledger)
            confirm = self.replica.confirm
        self.states.attach(workspace.forget_ledger)
        # async replication answers at the commit and confirms behind, once a sync interval,
        # only to learn what the replica holds (what the directory may record)
        self.writer = GroupCommitWriter(
            workspace,
            self.max_batch,
            name=self.workspace_id,
            confirm=confirm,
            answer_first=self.replica is not None and not self.replica.synchronous,
            confirm_every_s=ASYNC_SYNC_INTERVAL_S,
            on_durable=self.on_durable,
            owes_confirm=(lambda: replica.history_owed) if (replica := self.replica) else None,
        )

    def ensure_open(self) -> None:
        """Make sure the file is open before a call. After a restore whose reopen failed (the
        disk was full, say), each call tries to open it again, so the workspace recovers on
        its own once the cause is gone and a caller meanwhile gets a clear 503, not a crash."""
        if self.workspace is not None:
            return
        if self._closed:
            raise WorkspaceClosed(f"workspace {self.workspace_id} is closed")
        try:
            self._open()
        except Exception as exc:  # noqa: BLE001 - answered as unavailable, retried next call
            log.error("workspace %s cannot be opened: %r", self.workspace_id, exc)
            raise WorkspaceUnavailable(
                f"workspace {self.workspace_id} cannot be opened right "
                f"now ({exc.__class__.__name__}); retry shortly"
            ) from None

    def _read_pool(self, workspace: Workspace) -> ReadPool:
        return ReadPool(
            self.path,
            threads=self.read_threads,
            on_follow_up=self.on_follow_up,
            hooks=workspace.hooks,
        )

    def rebind_vectors(
        self, embedder: EmbeddingProvider, progress: Callable[[int, int], None] | None = None
    ) -> dict[str, Any]:
        """Move the file's vectors to `embedder` (its blueprint now names it): bound at once,
        every entry re-embedded while the workspace serves (until then, ranked lexically). A
        file bound for the first time gets new readers (theirs lack the vector extension)."""
        self.ensure_open()
        workspace = self.workspace
        assert workspace is not None
        first = workspace.vectors is None
        vectors = workspace.switch_vectors(embedder)
        self.embedder = embedder  # a reopen (a restore) binds it too
        if first and self.reads is not None:
            old, self.reads = self.reads, self._read_pool(workspace)
            old.close()
        return cast(dict[str, Any], vectors.backfill(progress=progress))

    def let_go_of_file(self) -> None:
        """Before the file is replaced (a restore). The writer first: its confirmer may still
        be confirming, and a confirmation registers the file again (a daemon that lost it, a
        restart of the history) -- after the release, the daemon would follow the replaced
        file through the swap."""
        self._drain_writes()
        self._release_replica(self.writer is not None)
        self._close_io()

    def reopen_file(self) -> None:
        """After the file was replaced; a reopen that fails is retried by the next call
        (`ensure_open`)."""
        try:
            self._open()
        except Exception:  # the next call tries again and says why
            log.exception("workspace %s: reopening after restore failed", self.workspace_id)

    def _drain_writes(self) -> None:
        """Stop the file's own background writes (a vector backfill), then drain the writer:
        nothing commits after this, so the position read and the last sync that follow hold
        the last write."""
        if self.workspace is not None:
            self.workspace.hooks.close()
        if self.writer is not None and not self.writer.close():
            self.threads_left = True

    def _close_io(self) -> None:
        if self.writer is not None and not self.writer.close():
            self.threads_left = True
        if self.reads is not None:
            self.reads.close()
        if self.workspace is not None:
            self.workspace.close()
        self.writer = self.reads = self.workspace = None

    # ---- calls -------------------------------------------------------------------------------
    def opened(self) -> OpenFile:
        """The open file's parts (opening it first if it is closed)."""
        self.ensure_open()
        if self.workspace is None or self.reads is None or self.writer is None:
            raise WorkspaceClosed(f"workspace {self.workspace_id} is closed")
        return OpenFile(self.workspace, self.reads, self.writer)

    def durable_position(self) -> int | None:
        """The newest position the replica is known to hold (without replication: the newest
        committed), None while the file is not open: what the directory may record."""
        writer = self.writer
        return writer.durable_position if writer is not None else None

    def position(self) -> int:
        """The copy's position now (the newest acknowledged state of this workspace)."""
        copy = inspect_copy(self.path)
        return copy.position if copy is not None else 0

    def _position_now(self) -> int:
        """`position()`, read on the file while it is open (a connection of its own costs an
        open and a close)."""
        if self.workspace is not None:
            return self.workspace.location().position
        return self.position()

    def hibernate(self) -> HostHibernation:
        """Drain writes, snapshot if anything changed (unless the store is backing off, or the
        replica confirmed the last write and no named version is due yet), close."""
        self._closed = True
        was_open = self.writer is not None
        self._drain_writes()
        position = self._position_now()
        replicated = self._ship_last(was_open)
        manifest, error = self.states.before_closing(replicated=replicated)
        workspace = self.workspace
        owed = workspace is not None and self.states.cleanup_owed(workspace.forget_ledger)
        if not self.snapshotter.close():
            self.threads_left = True
        # Closed after the final sync and before the unregistration: the daemon's connection
        # is open then, so ours is not the file's last and does not checkpoint; the daemon
        # folds the WAL in as it lets go, and its next registration goes on from its history.
        # After a checkpoint of ours it copied the whole file into a new history (its CPU and
        # the store's bytes by the size of the file, at every wake).
        self._close_io()
        if self.replica is not None and was_open:
            self.replica.unregister()
            seal(self.path)  # the copy a next wake may open as it is: at_rest.py
        self._lock.release()
        status = self.snapshotter.status()
        pending = status["pendingWrites"] > 0
        return {
            "workspace": self.workspace_id,
            "snapshot": manifest,
            "error": error,
            "pendingSnapshot": pending,
            "snapshots": status,
            "position": position,
            # a replica that confirmed the last write holds it as surely as a snapshot: copies
            # left on other nodes at or below it can go
            "storedPosition": position if replicated or not pending else None,
            "cleanupOwed": owed,
            "threadsLeft": self.threads_left,
        }

    def _release_replica(self, was_open: bool) -> bool:
        """Ship the last writes and stop replicating (`was_open`: the file was open, so it was
        registered): the node's daemon holds only residents. True when the replica confirmed
        it holds the last write."""
        try:
            return self._ship_last(was_open)
        finally:
            if self.replica is not None and was_open:
                self.replica.unregister()

    def _ship_last(self, was_open: bool) -> bool:
        """The final sync (see `_release_replica`), the file still registered."""
        if self.replica is None or not was_open:
            return False
        try:
            self.replica.ship_last()
        except Exception as exc:  # noqa: BLE001 - the snapshot on the way out still runs
            log.warning("workspace %s: final replication sync failed: %r", self.workspace_id, exc)
            return False
        return True

    def close(self) -> None:
        self._closed = True
        self._drain_writes()
        self._release_replica(self.writer is not None)
        self.snapshotter.close()
        self._close_io()
        self._lock.release()

    def status(self) -> dict[str, Any]:
        """Never waits for the replication daemon: the replica's lag is the newest reading
        (hosting/lag_readings.py), so a status asked on an event loop does not stall it."""
        return {
            "activation": self.activation,
            "snapshots": self.snapshotter.status(),
            "store": self.store.description if self.store is not None else None,
            "replication": (
                None
                if self.replica is None
                else {"mode": self.replica.settings.mode, **self._lag_readings.latest()}
            ),
        }
