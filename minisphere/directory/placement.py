"""Where a new workspace actor starts: the node holding the workspace's file while it lives and
has a free workspace slot, else the node with the most free slots; where a warm spare starts;
and which spares to retire so idle nodes can go.

Workspace slots (`minisphere_workspace_slots`, a custom Ray resource) are how a node says how
many workspace actors it has memory for. Every workspace actor asks for one (`on`, or `auto`
once some node advertises them), so Ray never packs more onto a node than it can hold, and on
an autoscaling cluster an actor waiting for a slot is the demand for another node. The policy
decisions are the pure functions of `minisphere.control.residency_policy`; this adds the
cluster's facts, read through the runtime.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from minisphere.control.residency_policy import (
    MIB,
    misplaced_spares,
    node_with_room,
    placement,
    spare_home,
)
from minisphere.directory.actor_runtime import ActorRuntime, Handle
from minisphere.directory.residents import ResidentTable
from minisphere.directory.spares import NoRoomForSpare
from minisphere.settings import WORKSPACE_SLOT_RESOURCE

PLACED_ACTOR_CPUS = 0.001  # CPUs a placed workspace actor asks for (see aimed_at)
# What one workspace slot stands for: an idle bound actor's PSS (RESIDENT_ACTOR_PSS_BYTES),
# rounded up so a busy one (read pool, page cache of its file) still fits.
WORKSPACE_SLOT_MEMORY_BYTES = 64 * MIB
# Of a node's memory, the share its workspace actors may take; the rest is Ray's own processes,
# the ingress replica, the object store and the page cache.
NODE_WORKSPACE_MEMORY_SHARE = 0.5
SLOTS_PER_WORKSPACE_ACTOR = 1
ROOM_POLL_S = 0.1  # while waiting for a freed slot to show in Ray's view


def slot_request(mode: str, advertised: bool) -> dict[str, Any]:
    """Actor options asking for one workspace slot, or {}: `off`, or `auto` while no live node
    advertises slots (a plain `ray.init()` on a laptop). With `on` an actor waits for a free
    slot: on an autoscaling cluster, that wait is the demand for another node."""
    if mode == "on" or (mode == "auto" and advertised):
        return {"resources": {WORKSPACE_SLOT_RESOURCE: SLOTS_PER_WORKSPACE_ACTOR}}
    return {}


def node_workspace_slots(memory_bytes: float) -> int:
    """The workspace slots a node of this much memory advertises (at least one)."""
    return max(1, int(memory_bytes * NODE_WORKSPACE_MEMORY_SHARE / WORKSPACE_SLOT_MEMORY_BYTES))


@dataclass
class Placement:
    """Actor options aiming a new actor at a node, why, and the node whose slot it was
    promised (None once released, or when the actor is not aimed)."""

    options: dict[str, Any]
    why: str
    node: str | None


class NodePlacement:
    def __init__(self, runtime: ActorRuntime, residents: ResidentTable, slots: str = "auto"):
        self.runtime = runtime
        self.residents = residents
        self.slots = slots  # auto | on | off (settings)
        self._claims: dict[str, int] = {}  # node -> slots promised to starting actors

    def alive_nodes(self) -> set[str]:
        return set(self.runtime.alive_nodes())

    def slot_request(self) -> dict[str, Any]:
        """Actor options asking for a workspace slot, or {} (see `slot_request`)."""
        advertised = self.slots == "auto" and any(
            WORKSPACE_SLOT_RESOURCE in resources
            for resources in self.runtime.alive_nodes().values()
        )
        return slot_request(self.slots, advertised)

    def slots_missing(self) -> bool:
        """Workspace actors must ask for a slot (`on`) and no live node advertises any: no
        workspace actor can start until a node that does joins."""
        return self.slots == "on" and not any(
            WORKSPACE_SLOT_RESOURCE in resources
            for resources in self.runtime.alive_nodes().values()
        )

    def placement_of(self, recorded_node: str | None) -> tuple[str | None, str]:
        """The node to bind the workspace on (None: any), and why."""
        return placement(recorded_node, self.alive_nodes())

    def place(self, recorded_node: str | None) -> Placement:
        """Where a new workspace actor should start, and why. With workspace slots every new
        actor is aimed at a node chosen here (the file's node if it has a free slot, else the
        node with the most), counting the slots already promised to actors still starting:
        left to Ray, wakes with no recorded node would take the very slots promised to wakes
        aimed at their file's node, which would then wait on the full node for good. With
        no free slot anywhere the actor is not aimed: its wait is the autoscaler's demand."""
        node, why = self.placement_of(recorded_node)
        if not self.slot_request():
            return self._claim(node, why) if node is not None else Placement({}, why, None)
        chosen = node_with_room(node, self._free_slots_now(), SLOTS_PER_WORKSPACE_ACTOR)
        if chosen is None:
            return Placement({}, "no node has a free slot: waiting for one (or a new node)", None)
        if chosen != node:
            why = (
                "node holding the file has no free slot; " if node else ""
            ) + "node with the most free slots"
        return self._claim(chosen, why)

    def place_spare(self, turn: int, spares_on: dict[str, int]) -> Placement:
        """Where a new spare starts. With workspace slots: `spare_home` (nodes holding bound
        workspaces in turn, so idle nodes stay idle for the autoscaler to remove), and with no
        room anywhere no spare at all (NoRoomForSpare): a spare waiting for a slot would be
        autoscaler demand for a node that holds nothing else. Without slots: the live nodes
        in turn."""
        if self.slot_request():
            chosen = spare_home(
                turn,
                self._free_slots_now(),
                self.busy_nodes(),
                spares_on,
                SLOTS_PER_WORKSPACE_ACTOR,
            )
            if chosen is None:
                raise NoRoomForSpare("no node has a free workspace slot")
            return self._claim(chosen, "warm spare")
        nodes = sorted(self.alive_nodes())
        if len(nodes) > 1:
            return self._claim(nodes[turn % len(nodes)], "spread over the nodes")
        return Placement({}, "one node", None)

    def misplaced_spares(self, spare_nodes: dict[str, str | None]) -> list[str]:
        """Ready spares to retire so that idle nodes can go (see `misplaced_spares`)."""
        if not spare_nodes or not self.slot_request():  # the sweep asks every round
            return []
        return misplaced_spares(
            spare_nodes, self._free_slots_now(), self.busy_nodes(), SLOTS_PER_WORKSPACE_ACTOR
        )

    def busy_nodes(self) -> set[str]:
        """Live nodes holding at least one bound workspace."""
        return self.residents.busy_nodes() & self.alive_nodes()

    def _claim(self, node_id: str, why: str) -> Placement:
        self._claims[node_id] = self._claims.get(node_id, 0) + SLOTS_PER_WORKSPACE_ACTOR
        # soft: when the node is gone, Ray restarts the actor elsewhere, where it restores
        # from the snapshot store
        return Placement(self.runtime.aimed_at(node_id, PLACED_ACTOR_CPUS), why, node_id)

    def release(self, placed: Placement | None) -> None:
        """The actor aimed by `placed` has started (its slot now shows in Ray's figures) or
        was given up: its promise ends."""
        if placed is None or placed.node is None:
            return
        left = self._claims.get(placed.node, 0) - SLOTS_PER_WORKSPACE_ACTOR
        if left > 0:
            self._claims[placed.node] = left
        else:
            self._claims.pop(placed.node, None)
        placed.node = None

    def _free_slots_now(self) -> dict[str, float]:
        """Live node -> workspace slots free, less those promised to actors still starting."""
        available = self.runtime.free_slots()
        return {
            node: available.get(node, 0) - self._claims.get(node, 0) for node in self.alive_nodes()
        }

    def full(self, node_id: str | None) -> bool:
        """A live node, slots required, and none of them free there: a workspace whose file is
        on it would have to move (or a resident there make room)."""
        if node_id is None or node_id not in self.alive_nodes() or not self.slot_request():
            return False
        return self._free_slots_now().get(node_id, 0) < SLOTS_PER_WORKSPACE_ACTOR

    def waiting_for_nodes(self) -> bool:
        """Slots required and no live node has one free: a wake now is a pending actor, the
        demand an autoscaler answers with a node, not a queue this cluster's CPUs serve."""
        if not self.slot_request():
            return False
        return node_with_room(None, self._free_slots_now(), SLOTS_PER_WORKSPACE_ACTOR) is None

    async def until_room(self, node_id: str, timeout_s: float) -> bool:
        """Wait (bounded) until `node_id` shows a free slot; whether it does."""
        deadline = time.monotonic() + timeout_s
        while self.full(node_id):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(ROOM_POLL_S)
        return True

    def stuck(self, handle: Handle, placed: Placement | None) -> bool:
        """An aimed actor that has not started and whose node has no free slot: a pending
        actor with a node affinity is never the autoscaler's demand, so it would wait there
        until another workspace on that node hibernates. One that has a worker process is
        only slow to start (a burst of process starts), and without workspace slots nothing
        waits for a slot at all."""
        if placed is None or placed.node is None or not self.slot_request():
            return False
        if self.runtime.has_process(handle):
            return False
        return self.runtime.free_slots().get(placed.node, 0) < SLOTS_PER_WORKSPACE_ACTOR
