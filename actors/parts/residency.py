"""The directory's view of resident workspace actors: recency, the cap, idleness, placement
and which actors ended by a clean hibernation (so calls that hit them were never run).

Policy decisions are the pure functions of `minisphere.control.residency`; this adds the Ray facts
(live nodes, actors' last-call times) and the scheduling strategy.
"""
from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from actors.parts.spares import NoRoomForSpare
from minisphere.control.residency import (
    MIB,
    idle_residents,
    misplaced_spares,
    node_with_room,
    placement,
    spare_home,
)
from minisphere.settings import WORKSPACE_SLOT_RESOURCE

NODE_CACHE_S = 2.0                 # how long the list of live nodes is trusted
ACTIVITY_TIMEOUT_S = 0.5           # how long the directory waits for actors' last-call times
REFRESH_INTERVAL_S = 1.0           # actors' last-call times are asked for at most this often
# A workspace just bound keeps its slot this long: its first call is still on the way, and
# evicting it then would only wake it again (under more wakes than the cap, a livelock).
MIN_RESIDENCY_S = 2.0
CLEAN_EXITS_KEPT = 10_000          # actor ids remembered as cleanly hibernated
PLACED_ACTOR_CPUS = 0.001          # CPUs a placed workspace actor asks for (see Residency._claim)
# What one workspace slot stands for: an idle bound actor measured 57 MiB PSS; rounded up so a
# busy one (read pool, page cache of its file) still fits.
WORKSPACE_SLOT_MEMORY_BYTES = 64 * MIB
# Of a node's memory, the share its workspace actors may take; the rest is Ray's own processes,
# the ingress replica, the object store and the page cache.
NODE_WORKSPACE_MEMORY_SHARE = 0.5
SLOTS_PER_WORKSPACE_ACTOR = 1


def slot_request(mode: str, advertised: bool) -> dict:
    """Actor options asking for one workspace slot, or {}: `off`, or `auto` while no live node
    advertises slots (a plain `ray.init()` on a laptop). With `on` an actor waits for a free
    slot: on an autoscaling cluster, that wait is the demand for another node."""
    if mode == "on" or (mode == "auto" and advertised):
        return {"resources": {WORKSPACE_SLOT_RESOURCE: SLOTS_PER_WORKSPACE_ACTOR}}
    return {}


def prefer_node(node_id: str) -> NodeAffinitySchedulingStrategy:
    """Start on this node if it has room, else on another. A soft affinity alone falls back only
    when the node is gone, not when it is full."""
    return NodeAffinitySchedulingStrategy(node_id, soft=True, _spill_on_unavailable=True)


def node_workspace_slots(memory_bytes: float) -> int:
    """The workspace slots a node of this much memory advertises (at least one)."""
    return max(1, int(memory_bytes * NODE_WORKSPACE_MEMORY_SHARE / WORKSPACE_SLOT_MEMORY_BYTES))


class Residency:
    def __init__(self, max_resident: int, idle_s: float, slots: str = "auto"):
        self.max_resident = int(max_resident)
        self.slots = slots                             # auto | on | off (settings)
        self.idle_s = float(idle_s)
        self.last_used: dict[str, float] = {}          # workspace -> wall time of last use
        self.failing: set[str] = set()                 # resident with a failing snapshot
        self._clean: OrderedDict[str, None] = OrderedDict()
        self._nodes: tuple[float, dict[str, dict]] = (0.0, {})   # live node -> resources
        self._refreshed_at = float("-inf")
        self.bound_at: dict[str, float] = {}           # workspace -> monotonic time it was bound
        self._claims: dict[str, int] = {}              # node -> slots promised to starting actors
        self.node_of: dict[str, str] = {}              # resident workspace -> node it runs on

    # ---- recency ---------------------------------------------------------------------------------
    def touch(self, workspace_id: str) -> None:
        self.last_used[workspace_id] = max(self.last_used.get(workspace_id, 0.0), time.time())

    def forget(self, workspace_id: str) -> None:
        self.last_used.pop(workspace_id, None)
        self.bound_at.pop(workspace_id, None)
        self.node_of.pop(workspace_id, None)
        self.failing.discard(workspace_id)

    def bound(self, workspace_id: str, node_id: str | None) -> None:
        self.bound_at[workspace_id] = time.monotonic()
        self.located(workspace_id, node_id)
        self.touch(workspace_id)

    def located(self, workspace_id: str, node_id: str | None) -> None:
        """A resident workspace runs on this node (bound there, adopted, or restarted there)."""
        if node_id:
            self.node_of[workspace_id] = node_id

    def evictable(self, resident, incoming: str) -> dict[str, float]:
        """Residents that may hibernate for room, with their last use: not the incoming one,
        not one bound within MIN_RESIDENCY_S."""
        now = time.monotonic()
        return {ws: self.last_used.get(ws, 0.0) for ws in resident
                if ws != incoming and now - self.bound_at.get(ws, float("-inf")) >= MIN_RESIDENCY_S}

    async def refresh(self, handles: dict) -> None:
        """Ask every resident actor for its last call time (those that do not answer in time,
        e.g. still starting, keep the directory's own time). At most once per
        REFRESH_INTERVAL_S: under a stream of wakes it would otherwise ask every resident on
        every wake."""
        if time.monotonic() - self._refreshed_at < REFRESH_INTERVAL_S:
            return
        self._refreshed_at = time.monotonic()
        async def ask(workspace_id: str):
            try:
                return workspace_id, await asyncio.wait_for(
                    handles[workspace_id].activity.remote(), ACTIVITY_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - slow or dead: handled at its next call
                return workspace_id, None
        ids = [ws for ws in handles if ws in self.last_used]
        for ws, info in await asyncio.gather(*(ask(ws) for ws in ids)):
            if info is None:
                continue
            self.last_used[ws] = max(self.last_used.get(ws, 0.0), info["lastCallAt"])
            if info.get("snapshotFailing"):
                self.failing.add(ws)
            else:
                self.failing.discard(ws)

    def idle(self) -> list[str]:
        """Idle residents; those whose snapshots are failing stay (their retries live there)."""
        return [ws for ws in idle_residents(self.last_used, time.time(), self.idle_s)
                if ws not in self.failing]

    # ---- clean exits ---------------------------------------------------------------------------
    def record_clean_exit(self, actor_id: str) -> None:
        self._clean[actor_id] = None
        while len(self._clean) > CLEAN_EXITS_KEPT:
            self._clean.popitem(last=False)

    def ended_cleanly(self, actor_id: str) -> bool:
        return actor_id in self._clean

    # ---- placement -------------------------------------------------------------------------------
    def _alive(self) -> dict[str, dict]:
        expires, nodes = self._nodes
        if time.monotonic() >= expires:
            nodes = {n["NodeID"]: n.get("Resources") or {} for n in ray.nodes() if n.get("Alive")}
            self._nodes = (time.monotonic() + NODE_CACHE_S, nodes)
        return nodes

    def alive_nodes(self) -> set[str]:
        return set(self._alive())

    def slot_request(self) -> dict:
        """Actor options asking for a workspace slot, or {} (see `slot_request`)."""
        advertised = self.slots == "auto" and any(
            WORKSPACE_SLOT_RESOURCE in resources for resources in self._alive().values())
        return slot_request(self.slots, advertised)

    def placement_of(self, recorded_node: str | None) -> tuple[str | None, str]:
        """The node to bind the workspace on (None: any), and why."""
        return placement(recorded_node, self.alive_nodes())

    def place(self, recorded_node: str | None) -> Placement:
        """Where a new workspace actor should start, and why. With workspace slots every new
        actor is aimed at a node chosen here (the file's node if it has a free slot, else the
        node with the most), counting the slots already promised to actors still starting:
        left to Ray, wakes with no recorded node took the very slots that the wakes aimed at
        their file's node were promised, and those then waited on the full node for good. With
        no free slot anywhere the actor is not aimed: its wait is the autoscaler's demand."""
        node, why = self.placement_of(recorded_node)
        if not self.slot_request():
            return self._claim(node, why) if node is not None else Placement({}, why, None)
        chosen = node_with_room(node, self._free_slots_now(), SLOTS_PER_WORKSPACE_ACTOR)
        if chosen is None:
            return Placement({}, "no node has a free slot: waiting for one (or a new node)", None)
        if chosen != node:
            why = ("node holding the file has no free slot; " if node else "") + \
                "node with the most free slots"
        return self._claim(chosen, why)

    def place_spare(self, turn: int, spares_on: dict[str, int]) -> Placement:
        """Where a new spare starts. With workspace slots: `spare_home` (nodes holding bound
        workspaces in turn, so idle nodes stay idle for the autoscaler to remove), and with no
        room anywhere no spare at all (NoRoomForSpare): a spare waiting for a slot would be
        autoscaler demand for a node that holds nothing else. Without slots: the live nodes
        in turn."""
        if self.slot_request():
            chosen = spare_home(turn, self._free_slots_now(), self.busy_nodes(), spares_on,
                                SLOTS_PER_WORKSPACE_ACTOR)
            if chosen is None:
                raise NoRoomForSpare("no node has a free workspace slot")
            return self._claim(chosen, "warm spare")
        nodes = sorted(self.alive_nodes())
        if len(nodes) > 1:
            return self._claim(nodes[turn % len(nodes)], "spread over the nodes")
        return Placement({}, "one node", None)

    def misplaced_spares(self, spare_nodes: dict[str, str | None]) -> list[str]:
        """Ready spares to retire so that idle nodes can go (see `misplaced_spares`)."""
        if not spare_nodes or not self.slot_request():     # the sweep asks every round
            return []
        return misplaced_spares(spare_nodes, self._free_slots_now(), self.busy_nodes(),
                                SLOTS_PER_WORKSPACE_ACTOR)

    def busy_nodes(self) -> set[str]:
        """Live nodes holding at least one bound workspace."""
        return set(self.node_of.values()) & self.alive_nodes()

    def _claim(self, node_id: str, why: str) -> Placement:
        self._claims[node_id] = self._claims.get(node_id, 0) + SLOTS_PER_WORKSPACE_ACTOR
        # Ray 2.60 ignores a *soft* node affinity for an actor that requests no resources, so
        # a placed actor asks for a token CPU share (soft: when the node is gone, Ray restarts
        # the actor elsewhere, where it restores from the snapshot store).
        options = {"scheduling_strategy": prefer_node(node_id), "num_cpus": PLACED_ACTOR_CPUS}
        return Placement(options, why, node_id)

    def release(self, placed: Placement) -> None:
        """The actor aimed by `placed` has started (its slot now shows in Ray's figures) or
        was given up: its promise ends."""
        if placed.node is None:
            return
        left = self._claims.get(placed.node, 0) - SLOTS_PER_WORKSPACE_ACTOR
        if left > 0:
            self._claims[placed.node] = left
        else:
            self._claims.pop(placed.node, None)
        placed.node = None

    @staticmethod
    def _slots_available() -> dict[str, float]:
        """Node -> workspace slots Ray has not handed out (one GCS call)."""
        return {node: resources.get(WORKSPACE_SLOT_RESOURCE, 0) for node, resources
                in ray._private.state.available_resources_per_node().items()}

    def _free_slots_now(self) -> dict[str, float]:
        """Live node -> workspace slots free, less those promised to actors still starting."""
        available = self._slots_available()
        return {node: available.get(node, 0) - self._claims.get(node, 0)
                for node in self.alive_nodes()}

    def stuck(self, handle, placed: Placement) -> bool:
        """An aimed actor that has not started and whose node has no free slot: a pending
        actor with a node affinity is never the autoscaler's demand, so it would wait there
        until another workspace on that node hibernates. One that has a worker process (Ray
        reports its pid before it is ALIVE) is only slow to start (a burst of process starts),
        and without workspace slots nothing waits for a slot at all."""
        if placed.node is None or not self.slot_request():
            return False
        info = ray._private.state.actors(handle._actor_id.hex())
        if info.get("State") == "ALIVE" or info.get("Pid"):
            return False
        return self._slots_available().get(placed.node, 0) < SLOTS_PER_WORKSPACE_ACTOR


@dataclass
class Placement:
    """Actor options aiming a new actor at a node, why, and the node whose slot it was
    promised (None once released, or when the actor is not aimed)."""
    options: dict
    why: str
    node: str | None
