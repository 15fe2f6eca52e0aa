"""Binding one new or spare actor to a workspace, and replacing it while it waits.

A new actor may wait for its process for long: for a slot on a node that filled up after it
was aimed there, for a node the autoscaler has yet to add, or for a slot that a spare which
became ready meanwhile now holds. Each wait has a way out here: started elsewhere, refused by
name when no node advertises slots at all, or replaced by the ready spare.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from minisphere.control.auth import TokenGrant
from minisphere.control.plane import ControlPlane
from minisphere.directory.actor_runtime import ActorGone, ActorRuntime, Handle
from minisphere.directory.launch import WorkspaceLaunch, new_actor_name
from minisphere.directory.placement import NodePlacement, Placement
from minisphere.directory.residents import Resident, WakeSource
from minisphere.directory.spares import Spare, SparePool
from minisphere.errors import NoWorkspaceSlots
from minisphere.reply import Reply
from minisphere.wire.actor_methods import WorkspaceActorMethod
from minisphere.wire.residency import BindAnswer

log = logging.getLogger("minisphere.directory")
Binding = asyncio.Future[Reply[BindAnswer]]  # the bind call under way
BIND_TIMEOUT_S = 120.0  # opening a file, restoring it from a snapshot if missing
# A bind past BIND_TIMEOUT_S whose restore staged more bytes since the last look is given this
# much longer each time (a restore of a large file), up to BIND_RESTORE_MAX_S in all.
BIND_PROGRESS_WINDOW_S = 60.0
BIND_RESTORE_MAX_S = 3600.0
OPENING_ASK_TIMEOUT_S = 5.0  # for the actor to say how far its restore has come
# A new actor aimed at a node that is still not started after this long while that node has no
# free workspace slot is started elsewhere: a start slowed by a busy node ends and frees the
# slots, a full node's wait never does.
PLACEMENT_STALL_S = 15.0
# With workspace slots required and no node advertising any, a wake waits this long (the actor
# it started is the demand an autoscaler answers with a node) before it is refused with a named
# error saying which resource is missing, instead of hanging until the request times out.
NO_SLOTS_WAIT_S = 20.0
# While a wake's new actor waits for its process, how often it looks for a spare that became
# ready meanwhile (then bound instead: the pending actor may be waiting for the spare's slot)
SPARE_WATCH_S = 1.0
SLOTS_RESOURCE_HINT = (
    "no node of the cluster advertises the minisphere_workspace_slots resource that "
    "MINISPHERE_WORKSPACE_SLOTS=on makes every workspace actor ask for: start the nodes with "
    "`ray start ... --resources '{\"minisphere_workspace_slots\": N}'` (N: half the node's "
    "memory / 64 MiB) or set MINISPHERE_WORKSPACE_SLOTS=auto"
)


class ActorBinder:
    """Binds a resident's actor (`bind`), replacing it while it has no process: see above.
    `start_actor(name, placement)` starts a new workspace actor."""

    def __init__(
        self,
        runtime: ActorRuntime,
        placement: NodePlacement,
        pool: SparePool,
        control: ControlPlane,
        start_actor: Callable[[str, Placement | None], Handle],
    ):
        self.runtime = runtime
        self.placement = placement
        self.pool = pool
        self.control = control
        self.start_actor = start_actor
        self._told_slots_missing = False

    async def bind(
        self,
        workspace_id: str,
        resident: Resident,
        placed: Placement | None,
        launch: WorkspaceLaunch,
        grants: tuple[TokenGrant, ...],
    ) -> tuple[Reply[BindAnswer], WakeSource | None]:
        """Bind the actor; its reply, and "spare" when a spare took the place of a new actor
        that never got a process. A new actor aimed at a node that filled up before it started
        (a wake racing it for the last slot) would wait there for good, so one still not
        started after PLACEMENT_STALL_S on a full node is replaced by one that may start
        anywhere: on another node, or on a new one the autoscaler adds for it."""
        started = time.monotonic()
        swapped_for: WakeSource | None = None
        binding = await self._unstalled(
            workspace_id,
            resident,
            placed,
            launch,
            grants,
            self._bind_call(resident, launch, grants),
        )
        await self._unless_slots_missing(binding)
        deadline, staged = started + BIND_TIMEOUT_S, 0
        try:
            while not binding.done():
                left = deadline - time.monotonic()
                if left <= 0:
                    # a restore that staged more since the last look goes on, within a bound
                    staged = await self._staged_more_than(resident, staged, started)
                    deadline = time.monotonic() + BIND_PROGRESS_WINDOW_S
                    continue
                await asyncio.wait([binding], timeout=min(SPARE_WATCH_S, left))
                spare = self._spare_for_pending(resident, binding, placed)
                if spare is not None:
                    self.placement.release(placed)
                    swapped_for = "recycled" if spare.recycled else "spare"
                    binding = self._replace_pending(
                        workspace_id,
                        resident,
                        binding,
                        spare.handle,
                        spare.name,
                        "a spare was ready before its own process started",
                        launch,
                        grants,
                    )
            return binding.result(), swapped_for
        except (TimeoutError, ActorGone):
            self.runtime.kill(resident.handle)  # the replacement, when there was one
            raise

    async def _unstalled(
        self,
        workspace_id: str,
        resident: Resident,
        placed: Placement | None,
        launch: WorkspaceLaunch,
        grants: tuple[TokenGrant, ...],
        binding: Binding,
    ) -> Binding:
        """`binding`, or, when its actor still has not started after PLACEMENT_STALL_S on the
        full node it was placed on, the binding of a new actor that may start anywhere."""
        if placed is None or placed.node is None:
            return binding
        await asyncio.wait([binding], timeout=PLACEMENT_STALL_S)
        if binding.done() or not self.placement.stuck(resident.handle, placed):
            return binding
        log.warning(
            "workspace %s: its actor waited %.0f s on the full node %s; starting it elsewhere",
            workspace_id,
            PLACEMENT_STALL_S,
            placed.node[:12],
        )
        self.placement.release(placed)
        name = new_actor_name()
        return self._replace_pending(
            workspace_id,
            resident,
            binding,
            self.start_actor(name, None),
            name,
            "its node filled up before it started",
            launch,
            grants,
        )

    async def _staged_more_than(self, resident: Resident, seen: int, started: float) -> int:
        """The bytes the actor's restore has staged, when more than `seen` and the bind is
        younger than BIND_RESTORE_MAX_S; else TimeoutError (the bind is given up)."""
        if time.monotonic() - started < BIND_RESTORE_MAX_S:
            try:
                answer = await self.runtime.call(
                    resident.handle, WorkspaceActorMethod.OPENING, timeout_s=OPENING_ASK_TIMEOUT_S
                )
            except (TimeoutError, ActorGone):
                raise TimeoutError from None
            if answer["stagedBytes"] > seen:
                return int(answer["stagedBytes"])
        raise TimeoutError

    def _bind_call(
        self, resident: Resident, launch: WorkspaceLaunch, grants: tuple[TokenGrant, ...]
    ) -> Binding:
        return asyncio.ensure_future(
            self.runtime.call(resident.handle, WorkspaceActorMethod.BIND, launch, grants)
        )

    def _spare_for_pending(
        self, resident: Resident, binding: Binding, placed: Placement | None
    ) -> Spare | None:
        """A ready spare to bind instead, when the wake's own new actor has no process yet:
        it may be waiting for a slot that the spares themselves hold (they became ready after
        the wake started its actor), and a ready spare binds at once."""
        if binding.done() or not self.pool.has_ready():
            return None
        if self.runtime.has_process(resident.handle):
            return None
        node = placed.node if placed is not None else None
        return self.pool.take(node) if node and self.pool.has_ready(node) else self.pool.take()

    def _replace_pending(
        self,
        workspace_id: str,
        resident: Resident,
        binding: Binding,
        handle: Handle,
        name: str,
        why: str,
        launch: WorkspaceLaunch,
        grants: tuple[TokenGrant, ...],
    ) -> Binding:
        """Kill the actor that has not started, and bind `handle` in its place."""
        self.runtime.kill(resident.handle)
        binding.cancel()
        resident.handle, resident.actor_name, resident.placement = handle, name, why
        self.control.set_actor(workspace_id, name)
        return self._bind_call(resident, launch, grants)

    async def _unless_slots_missing(self, binding: Binding) -> None:
        """While no node advertises the workspace slots every actor asks for, wait at most
        NO_SLOTS_WAIT_S for one to join; then refuse the wake (logged once per directory)."""
        if not self.placement.slots_missing():
            return
        await asyncio.wait([binding], timeout=NO_SLOTS_WAIT_S)
        if binding.done() or not self.placement.slots_missing():
            return
        binding.cancel()
        if not self._told_slots_missing:
            self._told_slots_missing = True
            log.error("workspaces cannot start: %s", SLOTS_RESOURCE_HINT)
        raise NoWorkspaceSlots(SLOTS_RESOURCE_HINT, retry_after_s=NO_SLOTS_WAIT_S)
