"""How a workspace gets a process: a warm spare or a new actor, aimed at a node with a free
workspace slot, bound to the workspace's file under the resident cap; and how a dead or
retired one is let go.

`Activator.activate` is the only way in: concurrent activations of one workspace share one bind,
and a wake that would wait past the wake deadline behind others is refused at once
(`control/wake_admission.py`), unless it waits for a node the autoscaler is to add.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import NamedTuple

from minisphere.control.blueprints import parse_stored_blueprint
from minisphere.control.plane import ControlPlane, DurabilityRecord
from minisphere.control.wake_admission import WakeAdmission
from minisphere.directory.actor_runtime import ActorGone, ActorRuntime, Handle
from minisphere.directory.binding import ActorBinder
from minisphere.directory.hibernation import Hibernation
from minisphere.directory.launch import WorkspaceLaunch, new_actor_name
from minisphere.directory.placement import NodePlacement, Placement
from minisphere.directory.residents import Resident, ResidentTable, WakeSource
from minisphere.directory.spares import NoRoomForSpare, Spare, SparePool
from minisphere.errors import NotFound, Overloaded, WorkspaceUnavailable
from minisphere.settings import Settings
from minisphere.wire.actor_methods import WorkspaceActorMethod
from minisphere.wire.records import WorkspaceRecord
from minisphere.wire.residency import Activation

log = logging.getLogger("minisphere.directory")
# after evicting a resident to make room on its node: how long to wait for its slot to show
# free in Ray's resource view (reported by the node's raylet about once a second)
ROOM_SHOWN_TIMEOUT_S = 5.0
# How long a wake that finds no spare waits for one on its way back from a hibernation (a drain
# and a close, longer with a snapshot) before it starts a process.
RETURNING_WAIT_S = 1.0
FIRST_START_GUESS_S = 1.0  # a process start's duration before any was measured
# Process starts wakes may have under way at once, per CPU of the cluster: each takes most of a
# core while it runs, and the calls of the sessions already admitted need the rest.
WAKE_STARTS_AT_ONCE_PER_CPU = 0.5


class WakeActor(NamedTuple):
    """The process a wake binds: where it came from, and where a new one was aimed and why."""

    handle: Handle
    name: str
    source: WakeSource
    placed: Placement | None
    why: str


def pending_writes(snap: DurabilityRecord) -> int:
    """Writes the workspace holds that no snapshot does, as its last residency counted them
    (at least one when a snapshot is owed or none was ever taken)."""
    if not (snap["snapshotPending"] or not snap["lastSnapshotVersion"]):
        return 0
    return max(1, int((snap["snapshots"] or {}).get("pendingWrites") or 0))


def record_placement(
    control: ControlPlane, workspace_id: str, node_id: str, activation: Activation
) -> None:
    """Where the workspace opened, and from what: a restore from a snapshot is an event."""
    control.touch(workspace_id, node_id)
    if activation["source"] == "snapshot":
        control.record_event(
            workspace_id,
            "restore-on-activation",
            {"version": activation.get("version"), "node": node_id},
        )


class SpareStarter:
    """Starts the spare pool's actors where `NodePlacement.place_spare` says, given the pool's
    count of ready spares per node (`spares_on`)."""

    def __init__(self, runtime: ActorRuntime, placement: NodePlacement, residents: ResidentTable):
        self.runtime = runtime
        self.placement = placement
        self.residents = residents
        self._turn = 0

    async def start(self, spares_on: dict[str, int]) -> Spare:
        if self.residents.slots_held() and self.placement.slot_request():
            # wakes are waiting for slots: a spare started now could take the one they need
            raise NoRoomForSpare("wakes first")
        placed = self.placement.place_spare(self._turn, spares_on)
        self._turn += 1
        name = new_actor_name()
        handle = self.runtime.start(name, {**self.placement.slot_request(), **placed.options})
        try:
            info = await self.runtime.call(handle, WorkspaceActorMethod.READY)
        except BaseException:
            # failed, or given up on (the pool's timeout cancels this): a detached actor left
            # behind would start some day and sit unbound, holding a slot, for good
            self.runtime.kill(handle)
            raise
        finally:
            self.placement.release(placed)
        return Spare(handle, name, info["nodeId"])


class Activator:
    def __init__(
        self,
        settings: Settings,
        control: ControlPlane,
        runtime: ActorRuntime,
        residents: ResidentTable,
        placement: NodePlacement,
        pool: SparePool,
        hibernation: Hibernation,
        workspace_path: Callable[[str], str],
        starts_at_once: int = 1,
        on_move: Callable[[], None] = lambda: None,
    ):
        self.settings = settings
        self.control = control
        self.runtime = runtime
        self.residents = residents
        self.placement = placement
        self.pool = pool
        self.hibernation = hibernation  # makes room under the resident cap
        self.workspace_path = workspace_path  # workspace id -> its file on the node
        # a workspace opened on another node than before: the copy left behind holds what
        # it held, forgotten text included, until a node sweep deletes it
        self.on_move = on_move
        self.binder = ActorBinder(runtime, placement, pool, control, self._start)
        # bound since the directory started, by where the process came from (a hibernated
        # workspace's, a pre-started spare, or a new one): a wake served by a new actor waited
        # for a process start (the benchmarks' miss and start rates)
        self.wakes: dict[WakeSource, int] = {"recycled": 0, "spare": 0, "new": 0}
        self.wake_admission = WakeAdmission(settings.residency.wake_deadline_s)
        # processes wakes are starting now (none was ready for them), and how many may be
        self.starts_at_once = max(1, starts_at_once)
        self.starting = 0
        self.refused_for_starts = 0

    async def activate(self, workspace_id: str, caller_saw_failure: bool = False) -> Handle:
        """The workspace's actor handle, binding one if it is not resident. A caller that saw
        the actor fail says so: it is let go unless Ray still has it (restarting). A wake the
        node cannot bind within the wake deadline is refused at once (`Overloaded`)."""
        if caller_saw_failure:
            self.drop_if_dead(workspace_id)
            adopted = self.residents.get(workspace_id)
            if adopted is not None and adopted.adopted:
                await self.residents.confirm_adopted(workspace_id)
        resident = self.residents.get(workspace_id)
        if resident is not None:
            self.residents.touch(workspace_id)
            return resident.handle
        if workspace_id in self.residents.activations:  # it joins that wake
            return await self.residents.activations.joined(workspace_id)
        # a wake waiting for a node to be added is never refused for the queue ahead of it:
        # refused, its pending actor would never stand as the demand the autoscaler answers
        # (asked only of a wake about to be refused: it costs a call to Ray's GCS)
        retry_after_s = self.wake_admission.refusal_s(exempt=self.placement.waiting_for_nodes)
        if retry_after_s is not None:
            raise Overloaded(
                f"workspace {workspace_id} was not woken: {self.wake_admission.in_flight} "
                f"wakes are ahead of it, more than the node binds in "
                f"{self.wake_admission.deadline_s:g} s",
                retry_after_s=retry_after_s,
            )
        # counted now, before the wake's task first runs: the next caller sees it in flight
        began = self.wake_admission.begin(time.monotonic())
        return await self.residents.activations.run(
            workspace_id, lambda: self._admitted_bind(workspace_id, began)
        )

    async def _admitted_bind(self, workspace_id: str, began: tuple[float, int]) -> Handle:
        try:
            return await self._bind(workspace_id)
        finally:
            self.wake_admission.end(began, time.monotonic())

    def drop_if_dead(self, workspace_id: str) -> None:
        resident = self.residents.get(workspace_id)
        if resident is not None and self.runtime.find(resident.actor_name) is None:
            self.residents.forget(workspace_id)

    async def retire(self, workspace_id: str, handle: Handle) -> None:
        """Stop this actor serving the workspace now: forget it, kill it, and wait until Ray
        reports it dead, so no call on its way to it is served."""
        resident = self.residents.get(workspace_id)
        if resident is not None and resident.handle is handle:
            self.residents.forget(workspace_id)
        self.runtime.kill(handle)
        await self.runtime.until_dead(handle)

    def launch(self, workspace_id: str) -> WorkspaceLaunch:
        """What the actor is bound with: the file, and the location record's generation, a new
        fencing epoch and the newest acknowledged position (no copy below it is opened)."""
        record = self.control.get(workspace_id)
        snap = self.control.durability(workspace_id)
        location = self.control.locations.location(workspace_id)
        return WorkspaceLaunch(
            workspace_id,
            self.workspace_path(workspace_id),
            synchronous=self.settings.synchronous,
            max_batch=self.settings.max_batch,
            snapshots=self.settings.snapshots,
            generation=record["generation"],
            epoch=self.control.locations.next_epoch(workspace_id),
            position=location["position"],
            holder_node=record.get("nodeId"),
            replication=self.settings.replication,
            pending_writes=pending_writes(snap),
            last_snapshot_at=(snap["snapshots"] or {}).get("lastSnapshotAt"),
            expect_snapshot=bool(snap["lastSnapshotVersion"]),
            vector=parse_stored_blueprint(record["blueprint"]).bindings.vector,
        )

    # ---- binding -----------------------------------------------------------------------------------
    async def _bind(self, workspace_id: str) -> Handle:
        """Make room under the cap, take a spare on the node holding the file (or start an
        actor there), and bind it to the workspace."""
        if not self.control.exists(workspace_id):
            raise NotFound(f"no workspace {workspace_id}")
        await self.residents.hibernations.settled(workspace_id)  # its own must finish first
        started = time.perf_counter()
        await self._room_on_file_node(workspace_id)
        async with self.hibernation.slot_for(workspace_id):
            room_ms = (time.perf_counter() - started) * 1e3
            resident = await self._bind_in_slot(workspace_id)
        assert resident.wake is not None  # _bind_actor recorded the wake
        resident.wake["roomMs"] = round(room_ms, 3)
        resident.wake["wakeMs"] = round((time.perf_counter() - started) * 1e3, 3)
        return resident.handle

    async def _room_on_file_node(self, workspace_id: str) -> None:
        """The node holding the file is alive but full: hibernate its least recently used
        resident rather than move the workspace (a move costs a restore, and when the store is
        behind the file, only this node holds the newest state)."""
        node = self.control.get(workspace_id)["nodeId"]
        if node is None or not self.placement.full(node):
            return
        if self.pool.size and self.pool.has_ready(node):
            return  # a spare there holds a slot already: the wake binds it, evicting no one
        there = self.residents.evictable(workspace_id, on_node=node)
        if there:
            victim = min(there, key=there.__getitem__)
            log.info(
                "workspace %s: its node %s is full; hibernating %s there instead of moving",
                workspace_id,
                node[:12],
                victim,
            )
            resident = self.residents.get(victim)
            assert resident is not None  # `evictable` names residents only
            handle = resident.handle
            answer = await self.hibernation.hibernate(victim, "room on its node")
            if answer["hibernated"] and answer["recycled"]:
                return  # its process is a spare on that node now: the wake's own
            # the victim's slot is free only once its process is gone and Ray's resource view
            # shows it: placing before then finds the node still full and moves the workspace
            # anyway, paying for an eviction and a move
            await self.runtime.until_dead(handle)
            await self.placement.until_room(node, ROOM_SHOWN_TIMEOUT_S)

    async def _actor_for(self, record: WorkspaceRecord) -> WakeActor:
        """A spare (on the file's node when one is there) or a new actor placed for it."""
        recorded, why = self.placement.placement_of(record["nodeId"])
        if self.pool.size and not self.pool.has_ready(recorded) and self.pool.returning:
            # a hibernating workspace's process is on its way back to the pool: it is worth
            # waiting a moment for, where a fresh process costs a whole start
            await self.pool.returned(RETURNING_WAIT_S)
        spare = self.pool.take(recorded) if self.pool.size else None
        if spare is None and recorded is None and self.pool.size:
            spare = self.pool.take()
        if spare is not None:
            source: WakeSource = "recycled" if spare.recycled else "spare"
            return WakeActor(spare.handle, spare.name, source, None, why)
        self._refuse_another_start(record["id"])
        placed = self.placement.place(record["nodeId"])
        name = new_actor_name()
        return WakeActor(self._start(name, placed), name, "new", placed, placed.why)

    def _refuse_another_start(self, workspace_id: str) -> None:
        """A process start takes most of a core while it runs: past `starts_at_once` under
        way, another would only slow down the starts, the binds and the calls of the work
        already admitted, and wakes queued behind starts bring a node to a standstill. Refused
        at once instead, unless wakes are never refused or it waits for a node to be added."""
        if (
            self.starting < self.starts_at_once
            or self.wake_admission.deadline_s <= 0
            or self.placement.waiting_for_nodes()
        ):
            return
        self.refused_for_starts += 1
        raise Overloaded(
            f"workspace {workspace_id} was not woken: no spare process is ready and "
            f"{self.starting} are starting for other wakes",
            retry_after_s=max(1, math.ceil(self.pool.start_p50_s() or FIRST_START_GUESS_S)),
        )

    def _start(self, name: str, placed: Placement | None) -> Handle:
        options = {**self.placement.slot_request(), **(placed.options if placed else {})}
        return self.runtime.start(name, options)

    async def _bind_in_slot(self, workspace_id: str) -> Resident:
        handle, name, source, placed, why = await self._actor_for(self.control.get(workspace_id))
        resident = Resident(handle, name, placement=why)
        self.starting += source == "new"
        try:
            return await self._bind_actor(workspace_id, resident, source, placed)
        except BaseException:
            # Whatever went wrong once the process was taken or started (a named error, the
            # bind's timeout, a Ray or control-plane error, a cancellation), it is killed: a
            # detached actor nobody names would live on, unbound or half-bound, holding a
            # slot and a process that no hibernation or sweep would ever reach.
            self._abandon(workspace_id, resident)
            raise
        finally:
            self.starting -= source == "new"
            self.placement.release(placed)

    async def _bind_actor(
        self, workspace_id: str, resident: Resident, source: WakeSource, placed: Placement | None
    ) -> Resident:
        launch = self.launch(workspace_id)
        self.control.set_actor(workspace_id, resident.actor_name)  # before binding: a crash
        bind_started = time.perf_counter()  # finds it
        grants = tuple(self.control.tokens.grants(workspace_id))
        try:
            answer, swapped_for = await self.binder.bind(
                workspace_id, resident, placed, launch, grants
            )
            source = swapped_for or source
        except (TimeoutError, ActorGone) as exc:
            # its process died or never started: nothing was run, asking again may succeed
            raise WorkspaceUnavailable(
                f"workspace {workspace_id} could not be opened: "
                f"{exc.__class__.__name__}; retry shortly"
            ) from None
        bound = answer.unwrap()  # a refusal raises: the actor may hold part of it
        if not self._still_the_same_workspace(workspace_id, launch):
            raise NotFound(f"no workspace {workspace_id}")  # deleted (or re-created) meanwhile
        if tuple(self.control.tokens.grants(workspace_id)) != grants:  # changed while binding
            await self.runtime.call(
                resident.handle,
                WorkspaceActorMethod.SET_TOKENS,
                tuple(self.control.tokens.grants(workspace_id)),
            )
        node = bound["nodeId"]
        resident.node_id, resident.bound_at = node, time.monotonic()
        # The wake is a use, as of now: ranked by when its bind began, a wake that took long
        # on a loaded node would be the least recently used resident the moment it is bound,
        # and evicted before the call that asked for it arrives (then woken again)
        resident.last_used = time.time()
        resident.activation = bound["activation"]
        resident.wake = {
            "actor": source,
            "bindMs": round((time.perf_counter() - bind_started) * 1e3, 3),
            "openMs": bound["openMs"],
        }
        self.control.set_state(workspace_id, "active")
        record_placement(self.control, workspace_id, node, resident.activation)
        if launch.holder_node not in (None, node):  # the launch named where it lived
            self.on_move()
        self.wakes[source] += 1
        self.residents.add(workspace_id, resident)  # last: from here on it is resident
        return resident

    def _still_the_same_workspace(self, workspace_id: str, launch: WorkspaceLaunch) -> bool:
        """A delete that raced this activation wins: the bound actor must neither serve nor be
        handed the tokens of a workspace re-created with the id."""
        if not self.control.exists(workspace_id):
            return False
        return self.control.get(workspace_id)["generation"] == launch.generation

    def _abandon(self, workspace_id: str, resident: Resident) -> None:
        """The actor did not bind: the control plane names no actor for the workspace, and
        the actor (started, starting or half-bound) is killed."""
        if self.control.workspace_of_actor(resident.actor_name) == workspace_id:
            self.control.set_actor(workspace_id, None)
        self.runtime.kill(resident.handle)
