"""Which copy of a workspace a host opens: the one current copy, or none.

A workspace's file can be on this node's disk (current, or left behind by a deleted creation
of the id or by a move), in its replica (continuous replication) and in its snapshots. Before
a host opens anything, `CurrentCopy.ensure` makes the file at `path` the current copy: a local
copy of this generation that reaches the newest acknowledged position is kept; any other is
deleted; then the replica's newest state, then the newest good snapshot, is restored; and when
none of them reaches the acknowledged position the workspace is refused by name
(`WorkspaceDataMissing`) -- never opened older or empty in place of acknowledged writes.
(engine/location.py explains generations and positions.)
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from minisphere.durability.replication.locations import drop_local_history
from minisphere.durability.replication.registration import WorkspaceReplica
from minisphere.durability.replication.restore import restore_from_replica
from minisphere.durability.restores import restore_latest_good, verify_database
from minisphere.durability.stores import SnapshotStore
from minisphere.engine.db import DatabaseError
from minisphere.engine.location import CopyLocation, inspect_copy
from minisphere.errors import SnapshotError, SnapshotNotFound, WorkspaceDataMissing
from minisphere.files import fsync_dir
from minisphere.hosting.copies import (
    SIDE_SUFFIXES,
    UNREADABLE_MARK,
    discard_copy,
    remove_database,
)
from minisphere.wire.residency import Activation

log = logging.getLogger("minisphere.host")


@dataclass
class CurrentCopy:
    workspace_id: str
    path: Path
    generation: str | None  # this creation of the id
    min_position: int  # the newest acknowledged position: no copy below it
    store: SnapshotStore | None
    replica: WorkspaceReplica | None
    # This node is not the one that last held the workspace. The acknowledged position reaches
    # the directory a moment after the answer, so a copy left here by an earlier stay can pass
    # that floor while the lost node had acknowledged more: the replica is asked first.
    copy_may_be_behind: bool = False
    # What changed in the file since a hibernation sealed it (hosting/at_rest.py): such a copy
    # is restored over like an unreadable one, even when SQLite still opens it.
    altered_at_rest: str | None = None

    def ensure(self, expect_snapshot: bool) -> Activation:
        """Make sure the file at `path` is a current copy of this workspace: keep a local copy
        of this generation at the newest position, delete any other (a deleted creation's, or
        one left behind when the workspace moved on), restore from the store, and refuse when
        no reachable copy reaches the newest acknowledged position."""
        discarded, kept = (None, None) if self.altered_at_rest else self._discard_unusable_copy()
        if kept is not None:
            newer = (
                self._restore_from_replica(above=kept.position) if self.copy_may_be_behind else None
            )
            return newer or {"source": "local", "position": kept.position}
        unreadable = self._set_aside_unreadable()
        if unreadable is None:
            return self._restore(expect_snapshot, discarded)
        try:
            restored = self._restore(expect_snapshot, "its file was unreadable", refuse_empty=True)
        except BaseException:
            self._move_database(unreadable, self.path)  # nothing better: left for an operator
            raise
        remove_database(unreadable)
        return restored

    def _restore(
        self, expect_snapshot: bool, discarded: str | None, refuse_empty: bool = False
    ) -> Activation:
        """No local copy to keep: the replica's newest state, else the newest good snapshot,
        else an empty file for a workspace that never acknowledged a write. The daemon's local
        history beside the path goes first: it is of a file no longer there (set aside as
        unreadable, or a stale copy's), may hold text forgotten since on another node, and the
        daemon would carry it on under the restored file."""
        drop_local_history(self.path)
        started = time.perf_counter()
        from_replica = self._restore_from_replica()
        if from_replica is not None:
            return _discarding(from_replica, discarded)
        if self.store is None:
            return self._start_empty(
                expect_snapshot or refuse_empty, discarded, "no snapshot store"
            )
        try:
            restored = restore_latest_good(self.store, self.workspace_id, self.path)
        except SnapshotNotFound:
            return self._start_empty(
                expect_snapshot or refuse_empty,
                discarded,
                f"no snapshot in {self.store.description}",
            )
        restored_copy = inspect_copy(self.path)
        position = restored_copy.position if restored_copy is not None else -1
        if position < self.min_position:
            discard_copy(self.path)
            raise self._missing(
                f"the newest snapshot ({restored['version']}) reaches position {position}"
            )
        took = (time.perf_counter() - started) * 1e3
        log.info(
            "workspace %s restored from snapshot %s (position %d) in %.1f ms",
            self.workspace_id,
            restored["version"],
            position,
            took,
        )
        from_snapshot: Activation = {
            "source": "snapshot",
            "version": restored["version"],
            "restoreMs": took,
            "skipped": restored["skipped"],
            "position": position,
        }
        return _discarding(from_snapshot, discarded)

    def _set_aside_unreadable(self) -> Path | None:
        """A file SQLite cannot read (a torn or overwritten disk block), or one altered while
        it was sealed, is moved aside with its WAL, so a restore can take its place; where it
        went (None: no such file)."""
        if not self.path.exists():
            return None
        aside = self.path.with_name(self.path.name + UNREADABLE_MARK)
        log.error(
            "workspace %s: the local file %s %s; restoring from the store",
            self.workspace_id,
            self.path,
            self.altered_at_rest or "cannot be read",
        )
        self._move_database(self.path, aside)
        return aside

    @staticmethod
    def _move_database(source: Path, target: Path) -> None:
        remove_database(target)
        for suffix in ("", *SIDE_SUFFIXES):
            with contextlib.suppress(FileNotFoundError):
                Path(f"{source}{suffix}").replace(f"{target}{suffix}")
        fsync_dir(target.parent)

    def _restore_from_replica(self, above: int = -1) -> Activation | None:
        """The replica's newest state, when replication is on and it holds a usable copy (it
        is at least as new as any snapshot: it is shipped within a second of each commit) past
        position `above` (the local copy's, which it then replaces)."""
        if self.replica is None:
            return None
        started = time.perf_counter()
        staged = self.path.with_name(self.path.name + ".from-replica")
        copy = self._newest_from_replica(staged, max(self.min_position, above + 1))
        if copy is None:
            return None
        if above >= 0:
            log.warning(
                "workspace %s: the local copy (position %d) is behind its replica "
                "(position %d); restoring from the replica",
                self.workspace_id,
                above,
                copy.position,
            )
            discard_copy(self.path)
        staged.replace(self.path)
        fsync_dir(self.path.parent)
        took = (time.perf_counter() - started) * 1e3
        log.info(
            "workspace %s restored from its replica (position %d) in %.1f ms",
            self.workspace_id,
            copy.position,
            took,
        )
        return {"source": "replica", "position": copy.position, "restoreMs": took}

    def _newest_from_replica(self, staged: Path, floor: int) -> CopyLocation | None:
        """The replica's newest state of this creation at `floor` or past it, staged at
        `staged`: from its newest history that restores one (a node lost while a forget
        restarted the history may leave a new history without its first upload beside the
        old, whole one)."""
        assert self.replica is not None
        try:
            urls = self.replica.restore_urls()
        except Exception as exc:  # noqa: BLE001 - the store unreachable: snapshots are tried
            log.warning("workspace %s: its replica not listed (%r)", self.workspace_id, exc)
            return None
        for url in urls:
            try:
                found = restore_from_replica(url, staged, env=self.replica.daemon.env)
            except (SnapshotError, OSError) as exc:
                log.warning(
                    "workspace %s: no restore from its replica at %s (%s)",
                    self.workspace_id,
                    url.partition("?")[0],
                    exc,
                )
                found = False
            copy = inspect_copy(staged) if found and self._sound(staged) else None
            if copy is not None and copy.position >= floor and self._ours(copy):
                return copy
            remove_database(staged)  # a staging file: nothing else of the folder goes
        return None

    def _sound(self, staged: Path) -> bool:
        """The replica's state passes SQLite's integrity check (else the snapshots are tried)."""
        try:
            verify_database(staged)
        except (ValueError, DatabaseError) as exc:
            log.error(
                "workspace %s: its replica restored a broken file (%s); trying snapshots",
                self.workspace_id,
                exc,
            )
            return False
        return True

    def _discard_unusable_copy(self) -> tuple[str | None, CopyLocation | None]:
        """Delete the local copy when it belongs to another creation of the id or is older than
        the newest acknowledged position; returns (why it was deleted, the location of the copy
        kept): (None, None) when there was none."""
        local = inspect_copy(self.path)
        if local is None:
            return None, None
        if not self._ours(local):
            why = (
                f"it belongs to a deleted creation of the id ({local.generation})"
                if local.generation is not None
                else "it names no creation of the id (made before generations, or offline)"
            )
        elif local.position < self.min_position:
            why = (
                f"it is stale (position {local.position}, the workspace has reached "
                f"{self.min_position} elsewhere)"
            )
        else:
            return None, local
        log.warning(
            "workspace %s: deleting the local copy at %s: %s", self.workspace_id, self.path, why
        )
        discard_copy(self.path)
        return why, None

    def _ours(self, copy: CopyLocation) -> bool:
        """The copy belongs to this creation of the id. A copy without a generation is only
        a workspace's made before generations (itself without one): for any other it may be a
        deleted tenant's file, and the claim would stamp the new generation onto it."""
        return copy.generation == self.generation

    def _start_empty(self, expect_snapshot: bool, discarded: str | None, why: str) -> Activation:
        if expect_snapshot or self.min_position > 0:
            raise self._missing(f"{discarded}; {why}" if discarded else why)
        log.warning("workspace %s: no file and %s; starting empty", self.workspace_id, why)
        return _discarding({"source": "new", "position": 0}, discarded)

    def _missing(self, why: str) -> WorkspaceDataMissing:
        return WorkspaceDataMissing(
            f"workspace {self.workspace_id} was acknowledged up to position {self.min_position} "
            f"but no copy reachable here holds it ({why}); refusing to open it older or empty. "
            "Bring back the node or store holding it, or restore a named snapshot version to "
            "accept the loss"
        )


def _discarding(activation: Activation, discarded: str | None) -> Activation:
    """`activation`, saying why the copy found here was deleted first (when it was)."""
    if discarded:
        activation["discarded"] = discarded
    return activation
