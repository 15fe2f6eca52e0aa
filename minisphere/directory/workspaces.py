"""A workspace's life in the directory: its folder on the node, creation (the file is made and
migrated at once; the actor starts on first use), and deletion (the actor, the folder, this
generation's snapshots — owed to a later sweep when the store fails — and the record).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from pathlib import Path
from typing import Any

from minisphere.control.auth import check_workspace_id
from minisphere.control.blueprints import Blueprint, parse_blueprint
from minisphere.control.plane import ControlPlane
from minisphere.directory.actor_runtime import ActorRuntime
from minisphere.directory.deleted_replicas import RECHECK_AFTER_S, DeletedReplicas
from minisphere.directory.residents import ResidentTable
from minisphere.durability.generations import delete_generation_snapshots
from minisphere.durability.replication import delete_replica
from minisphere.durability.snapshotter import Backoff
from minisphere.durability.stores import SnapshotStore
from minisphere.engine.clock import epoch_ms
from minisphere.engine.workspace import Workspace
from minisphere.errors import NotFound, SnapshotError
from minisphere.hosting.copies import list_copies, sweep_node
from minisphere.settings import Settings, ensure_private_dir
from minisphere.wire.records import BornWith, CreatedWorkspace, Deleted

log = logging.getLogger("minisphere.directory")
AUDIT_KEPT_S = 90 * 86_400  # the audit trail's reach back
AUDIT_PRUNE_EVERY_S = 3_600.0
# A forget sweeps the nodes for copies left behind where the workspace lived before (they may
# hold the forgotten text); forgets in a row share one sweep at most this often.
FORGET_SWEEP_GAP_S = 5.0
# A sweep some node did not answer (down, restarting, its task failed) is sent again after
# this long, the gap doubling while it keeps failing, up to the periodic sweep's
NODE_SWEEP_RETRY_S = 10.0
NODE_SWEEP_RETRY_MAX_S = 600.0
NODE_SWEEP_BACKOFF = Backoff(
    initial_s=NODE_SWEEP_RETRY_S, factor=2.0, max_s=NODE_SWEEP_RETRY_MAX_S, jitter_ratio=0.0
)
# node -> what each node answered a sweep: the copies it deleted, or the name of its failure
NodeAnswers = dict[str, Any]


class WorkspaceLifecycle:
    def __init__(
        self,
        settings: Settings,
        control: ControlPlane,
        snapshots: SnapshotStore,
        residents: ResidentTable,
        runtime: ActorRuntime,
        contracts: list[BornWith],
        default_blueprint: Blueprint,
    ):
        self.settings = settings
        self.control = control
        self.snapshots = snapshots  # the snapshot store
        self.residents = residents
        self.runtime = runtime
        self.contracts = contracts  # what a new workspace is born with
        self.default_blueprint = default_blueprint
        self.root = ensure_private_dir(settings.workspaces_dir).resolve()
        self._sweep: asyncio.Task[None] | None = None  # the node sweep running, if any
        self._sweep_again = False
        self._forget_sweep: asyncio.Task[None] | None = None  # a forget's sweep, waiting its turn
        self._forget_swept_at = -FORGET_SWEEP_GAP_S
        # deleted generations whose replica is deleted once more after a node sweep that
        # reached every node, the one the workspace lived on among them: a killed actor's file
        # may still have been shipped until that node's sweep unregistered it
        # ((id, generation) -> its node, None when it never had one)
        self._replicas_to_recheck = DeletedReplicas()
        self._audit_pruned_at = -AUDIT_PRUNE_EVERY_S
        # live workspaces of which the last sweep had to keep a copy on a node they moved
        # from, the store not holding it yet (id -> the stored position then): swept again
        # once the store has moved on, since that copy may hold text forgotten since
        self._left_behind: dict[str, int] = {}
        self._retry_at: float | None = None  # when a sweep that missed a node goes again
        self._sweeps_missed = 0  # sweeps in a row that some node missed

    def folder(self, workspace_id: str) -> Path:
        folder = (self.root / check_workspace_id(workspace_id)).resolve()
        if folder.parent != self.root:  # belt and braces: the id pattern already forbids it
            raise NotFound(f"no workspace {workspace_id}")
        return folder

    def workspace_path(self, workspace_id: str) -> str:
        return str(self.folder(workspace_id) / "workspace.db")

    def create(
        self, workspace_id: str | None, blueprint: dict[str, Any] | None, label: str | None
    ) -> CreatedWorkspace:
        chosen = parse_blueprint(blueprint) if blueprint is not None else self.default_blueprint
        record, token = self.control.create(chosen, self.contracts, workspace_id, label)
        try:
            folder = self.folder(record["id"])
            if folder.exists():  # left over from an interrupted delete: keep it, aside
                aside = self.root / ".orphaned" / f"{record['id']}-{time.time_ns()}"
                ensure_private_dir(aside.parent)
                folder.rename(aside)
                log.warning("moved orphaned folder %s to %s", folder, aside)
            ensure_private_dir(folder)
            made = Workspace(folder / "workspace.db", synchronous=self.settings.synchronous)
            try:
                made.claim(record["generation"], 0)  # the file knows which creation it is
            finally:
                made.close()
        except BaseException:
            self.control.delete(record["id"])
            raise
        log.info("created workspace %s", record["id"])
        [grant] = self.control.tokens.grants(record["id"])
        return {"workspace": record, "token": token, "tokenId": grant.token_id}

    async def delete(self, workspace_id: str) -> Deleted:
        self.control.get(workspace_id)  # NotFound when absent
        self.control.set_state(workspace_id, "deleting")  # no new activation from here on
        # an activation in flight finds the workspace deleting once bound and lets go of its
        # actor; a hibernation in flight finishes its upload before the snapshots go
        await self.residents.activations.settled(workspace_id)
        await self.residents.hibernations.settled(workspace_id)
        resident = self.residents.forget(workspace_id)
        if resident is not None:
            self.runtime.kill(resident.handle)
            await self.runtime.until_dead(resident.handle)  # no upload after the deletion
        shutil.rmtree(self.folder(workspace_id), ignore_errors=True)
        generation = self.control.get(workspace_id)["generation"]
        lived_on = self.control.locations.location(workspace_id)["nodeId"]
        snapshots_deleted = await self._delete_snapshots(workspace_id, generation)
        self.control.delete(workspace_id)  # and records its tombstone
        self._replicas_to_recheck.add((workspace_id, generation), lived_on)
        log.info("deleted workspace %s", workspace_id)
        self.sweep_soon()  # its copies on every other node
        return {"deleted": workspace_id, "snapshotsDeleted": snapshots_deleted}

    def sweep_soon(self) -> None:
        """Sweep every node in the background, without holding up the caller: deletes in a
        row share sweeps (one runs at a time, and one more follows it to cover the deletes
        that came in meanwhile)."""
        if self._sweep is not None and not self._sweep.done():
            self._sweep_again = True
            return

        async def sweeps() -> None:
            while True:
                self._sweep_again = False
                await self.sweep_nodes()
                if not self._sweep_again:
                    return

        self._sweep = asyncio.get_running_loop().create_task(sweeps())

    def sweep_after_forget(self) -> None:
        """A forget committed: copies on nodes the workspace moved from are swept soon (a copy
        behind the stored position is stale, and holds the text). One waiting sweep covers
        every forget until it runs."""
        if self._forget_sweep is not None and not self._forget_sweep.done():
            return
        wait_s = max(0.0, self._forget_swept_at + FORGET_SWEEP_GAP_S - time.monotonic())

        async def after_the_gap() -> None:
            await asyncio.sleep(wait_s)
            self._forget_swept_at = time.monotonic()
            self.sweep_soon()

        self._forget_sweep = asyncio.get_running_loop().create_task(after_the_gap())

    def sweep_if_owed(self) -> None:
        """At each round of the directory's loop: sweep again when the last sweep could not
        finish, a node not answering (once the retry gap is up), or a copy left behind on a
        node that the store has since caught up with."""
        if self._retry_at is not None and time.monotonic() >= self._retry_at:
            self._retry_at = None
            self.sweep_soon()
            return
        for workspace_id, stored_then in list(self._left_behind.items()):
            try:
                stored_now = self.control.locations.location(workspace_id)["storedPosition"]
            except NotFound:  # deleted meanwhile: its delete swept
                self._left_behind.pop(workspace_id, None)
                continue
            if stored_now > stored_then:
                self.sweep_soon()
                return

    async def sweep_nodes(self) -> NodeAnswers | None:
        """On every node, let the replication daemon go of files no live host holds, and
        delete the copies of tombstoned generations and the stale copies of workspaces that
        moved on (minisphere/hosting/copies.py); node -> what it deleted (None: it failed).
        Then the replicas of deleted workspaces whose nodes it reached are deleted once more
        (again at later sweeps, until they stay empty: `DeletedReplicas`); the others wait for a
        later sweep (this one runs every few minutes too)."""
        recheck = self._replicas_to_recheck.take()
        swept = await self._sweep_every_node()
        for creation, (node, quiet) in recheck.items():
            found = await self._delete_generation(*creation) if _reached(swept, node) else None
            if found is None:
                self._replicas_to_recheck.keep(creation, node, quiet)
            else:
                self._replicas_to_recheck.deleted_again(creation, node, quiet, found)
        if _reached(swept, None):
            self._retry_at, self._sweeps_missed = None, 0
        else:
            self._sweeps_missed += 1
            self._retry_at = time.monotonic() + NODE_SWEEP_BACKOFF.delay_s(self._sweeps_missed)
        if self._replicas_to_recheck and self._retry_at is None:
            self._retry_at = time.monotonic() + RECHECK_AFTER_S
        return swept

    async def _sweep_every_node(self) -> NodeAnswers | None:
        """Each node says which copies it holds; then each is told which of them belong to no
        live creation (deleted, or its id made again) and which moved on, and sweeps."""
        root, daemon_dir = str(self.root), self.settings.replication.daemon_dir
        self._prune_audit()
        try:
            held = await self.runtime.on_every_node(list_copies, lambda node: (root,))
            dead = {
                node: self.control.locations.dead_copies(copies)
                for node, copies in held.items()
                if isinstance(copies, dict)
            }
            moved = self.control.locations.stored_copies()
            swept = await self.runtime.on_every_node(
                sweep_node,
                lambda node: (root, node, dead.get(node, {}), moved, "workspace.db", daemon_dir),
            )
        except Exception:  # tried again after the retry gap
            log.warning("node sweep failed", exc_info=True)
            return None
        for node, deleted in swept.items():
            if deleted:
                log.info("node %s swept: %s", node[:12], deleted)
        self._left_behind = _left_behind(held, swept, moved)
        return swept

    def _prune_audit(self) -> None:
        """At most once per AUDIT_PRUNE_EVERY_S, audit rows older than AUDIT_KEPT_S go."""
        now = time.monotonic()
        if now < self._audit_pruned_at + AUDIT_PRUNE_EVERY_S:
            return
        self._audit_pruned_at = now
        pruned = self.control.prune_audit(epoch_ms() - AUDIT_KEPT_S * 1000)
        if pruned:
            log.info("pruned %d audit rows older than %d days", pruned, AUDIT_KEPT_S // 86_400)

    async def _delete_snapshots(self, workspace_id: str, generation: str | None) -> bool:
        return await self._delete_generation(workspace_id, generation) is not None

    async def _delete_generation(self, workspace_id: str, generation: str | None) -> int | None:
        """Remove one generation's snapshots and replica: how many replica objects there were,
        None when the store failed (then it is owed, and the sweep retries).
        A workspace created later with the same id has another generation, so it never sees
        these meanwhile."""
        try:
            await asyncio.to_thread(
                delete_generation_snapshots, self.snapshots, workspace_id, generation
            )
            return await asyncio.to_thread(delete_replica, self.snapshots, workspace_id, generation)
        except SnapshotError as exc:
            log.warning(
                "snapshots of deleted workspace %s (%s) not removed yet: %s",
                workspace_id,
                generation,
                exc.message,
            )
            self.control.owe_snapshot_deletion(workspace_id, generation, exc.message)
            return None

    async def settle_snapshot_debts(self) -> int:
        """Retry deleting the snapshots of deleted workspaces; returns how many are left."""
        for workspace_id, generation in self.control.snapshot_debts():
            if await self._delete_snapshots(workspace_id, generation):
                self.control.settle_snapshot_debt(workspace_id, generation)
        return len(self.control.snapshot_debts())


def _left_behind(
    held: NodeAnswers,
    swept: NodeAnswers,
    moved: dict[str, tuple[str | None, str | None, int]],
) -> dict[str, int]:
    """Live workspaces with a copy a node kept though they live on another (id -> the stored
    position it was kept at): the store did not hold it yet."""
    left: dict[str, int] = {}
    for node, copies in held.items():
        kept = swept.get(node)
        if not isinstance(copies, dict) or not isinstance(kept, list):
            continue
        for workspace_id in copies.keys() - set(kept):
            _generation, holder, stored = moved.get(workspace_id, (None, None, 0))
            if holder not in (None, node):
                left[workspace_id] = stored
    return left


def _reached(swept: NodeAnswers | None, node: str | None) -> bool:
    """The sweep let every node's daemon go of the files no live host holds: each node it was
    sent to answered (a failure or a timeout answers its name instead of what it deleted), and
    the node the workspace lived on was among them (a node missing from the list of live ones
    may still run a daemon that ships the file)."""
    if swept is None or any(not isinstance(answer, list) for answer in swept.values()):
        return False
    return node is None or node in swept
