"""The operator's durability calls as an ingress replica runs them: snapshots, hibernation,
restores, pruning and the vector binding. Each reaches the workspace's actor (activating it)
through the replica's resend loop, or asks only the directory and the snapshot store where no
actor needs to wake (the snapshot listing)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from actors.workspace_reach import FOLLOW_HIBERNATION_S, WorkspaceReach
from minisphere.control.auth import check_workspace_id
from minisphere.durability.generations import generation_store
from minisphere.durability.restores import restored_answer
from minisphere.durability.snapshots import list_snapshots
from minisphere.durability.stores import SnapshotStore, open_snapshot_store
from minisphere.errors import WorkspaceDataMissing
from minisphere.http.service_responses import Hibernated
from minisphere.settings import Settings
from minisphere.wire.actor_methods import DirectoryMethod, ServedMethod
from minisphere.wire.records import WorkspaceDetail, WorkspaceRecord
from minisphere.wire.residency import HibernationAnswer
from minisphere.wire.stored_states import (
    FileBinding,
    Pruned,
    Restored,
    RestoredToMoment,
    SnapshotManifest,
    VectorBindingState,
    binding_answer,
)

if TYPE_CHECKING:
    from minisphere.durability.restores import SnapshotRestore


class DurabilityAdmin:
    def __init__(
        self,
        settings: Settings,
        reach: WorkspaceReach,
        ask_directory: Callable[..., Awaitable[Any]],
        admin_hash: str,
    ):
        self.settings = settings
        self.reach = reach
        self._ask_directory = ask_directory
        self.admin_hash = admin_hash  # the actors' admin methods check it again
        self._store: SnapshotStore | None = None  # made on first use

    async def actor_call(
        self, workspace_id: str, method: ServedMethod, *args: Any, timeout_s: float | None = None
    ) -> Any:
        """An admin call on the workspace's actor (activating it), following hibernation;
        `timeout_s`: a bound on the whole call, for steps of a known size (an export page, an
        import chunk). A snapshot or a restore takes what the file's size takes."""
        check_workspace_id(workspace_id)
        reply, _, _ = await self.reach.call(
            workspace_id,
            method,
            *args,
            idempotent_attempts=1,
            timeout_s=timeout_s,
            deadline_s=timeout_s or FOLLOW_HIBERNATION_S,
            unknown_outcome=f"workspace {workspace_id} restarted during {method}; retry shortly",
        )
        return reply.unwrap()

    async def snapshot(self, workspace_id: str) -> SnapshotManifest:
        manifest: SnapshotManifest = await self.actor_call(
            workspace_id, ServedMethod.SNAPSHOT, "manual", self.admin_hash
        )
        return manifest

    async def hibernate(self, workspace_id: str) -> Hibernated:
        """Hibernate the workspace now (snapshot if changed, close, release its actor)."""
        check_workspace_id(workspace_id)
        result: HibernationAnswer = await self._ask_directory(
            DirectoryMethod.HIBERNATE, workspace_id, "manual"
        )
        self.reach.forget(workspace_id)
        if not result["hibernated"]:
            return {
                "workspace": workspace_id,
                "hibernated": False,
                "why": result["why"],
                "snapshot": None,
                "pendingSnapshot": False,
            }
        return {
            "workspace": workspace_id,
            "hibernated": True,
            "why": None,
            "snapshot": result["snapshot"]["version"] if result["snapshot"] else None,
            "pendingSnapshot": result["pendingSnapshot"],
        }

    async def restore(self, workspace_id: str, version: str) -> Restored:
        try:
            result: SnapshotRestore = await self.actor_call(
                workspace_id, ServedMethod.RESTORE, version, self.admin_hash
            )
        except WorkspaceDataMissing:
            if version is None:
                raise
            # the admin names a version: that accepts losing what only an unreachable copy
            # held, so the workspace may open from the store and be restored to it
            await self._ask_directory(DirectoryMethod.ACCEPT_STORED_STATE, workspace_id)
            result = await self.actor_call(
                workspace_id, ServedMethod.RESTORE, version, self.admin_hash
            )
        return restored_answer(workspace_id, result)

    async def restore_to_moment(self, workspace_id: str, moment: str) -> RestoredToMoment:
        restored: RestoredToMoment = await self.actor_call(
            workspace_id, ServedMethod.RESTORE_TO_MOMENT, moment, self.admin_hash
        )
        return restored

    async def prune_snapshots(self, workspace_id: str, keep: int) -> Pruned:
        pruned: Pruned = await self.actor_call(
            workspace_id, ServedMethod.PRUNE_SNAPSHOTS, keep, self.admin_hash
        )
        return pruned

    async def rebind_vectors(self, workspace_id: str, vector: dict[str, Any]) -> VectorBindingState:
        """The blueprint names the binding `vector` from now on; the file follows, re-embedded
        while the workspace serves (its progress: `vector_binding`)."""
        check_workspace_id(workspace_id)
        record: WorkspaceRecord = await self._ask_directory(
            DirectoryMethod.SET_VECTOR_BINDING, workspace_id, vector
        )
        wanted: dict[str, Any] = record["blueprint"]["bindings"]["vector"]
        state: FileBinding = await self.actor_call(
            workspace_id, ServedMethod.REBIND_VECTORS, wanted, self.admin_hash
        )
        return binding_answer(workspace_id, wanted, state)

    async def vector_binding(self, workspace_id: str) -> VectorBindingState:
        check_workspace_id(workspace_id)
        record: WorkspaceDetail = await self._ask_directory(DirectoryMethod.GET, workspace_id)
        state: FileBinding = await self.actor_call(
            workspace_id, ServedMethod.VECTOR_BINDING, self.admin_hash
        )
        wanted = (record["blueprint"].get("bindings") or {}).get("vector")
        return binding_answer(workspace_id, wanted, state)

    def _snapshot_store(self) -> SnapshotStore:
        if self._store is None:
            self._store = open_snapshot_store(self.settings.snapshots)
        return self._store

    async def list_snapshots(self, workspace_id: str) -> list[SnapshotManifest]:
        """Versions in the store (no actor is woken for this)."""
        check_workspace_id(workspace_id)
        # NotFound if absent
        record: WorkspaceDetail = await self._ask_directory(DirectoryMethod.GET, workspace_id)
        store = generation_store(self._snapshot_store(), workspace_id, record["generation"])
        return await asyncio.to_thread(list_snapshots, store, workspace_id)
