"""The directory's view of resident workspace actors: recency, the cap, idleness, placement
and which actors ended by a clean hibernation (so calls that hit them were never run).

Policy decisions are the pure functions of `minisphere.control.residency`; this adds the Ray facts
(live nodes, actors' last-call times) and the scheduling strategy.
"""
from __future__ import annotations

import asyncio
import time
from collections import OrderedDict

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from minisphere.control.residency import idle_residents, placement

NODE_CACHE_S = 2.0                 # how long the list of live nodes is trusted
ACTIVITY_TIMEOUT_S = 0.5           # how long the directory waits for actors' last-call times
REFRESH_INTERVAL_S = 1.0           # actors' last-call times are asked for at most this often
# A workspace just bound keeps its slot this long: its first call is still on the way, and
# evicting it then would only wake it again (under more wakes than the cap, a livelock).
MIN_RESIDENCY_S = 2.0
CLEAN_EXITS_KEPT = 10_000          # actor ids remembered as cleanly hibernated
PLACED_ACTOR_CPUS = 0.001          # CPUs a placed workspace actor asks for (see scheduling())


class Residency:
    def __init__(self, max_resident: int, idle_s: float):
        self.max_resident = int(max_resident)
        self.idle_s = float(idle_s)
        self.last_used: dict[str, float] = {}          # workspace -> wall time of last use
        self.failing: set[str] = set()                 # resident with a failing snapshot
        self._clean: OrderedDict[str, None] = OrderedDict()
        self._nodes: tuple[float, set[str]] = (0.0, set())
        self._refreshed_at = float("-inf")
        self.bound_at: dict[str, float] = {}           # workspace -> monotonic time it was bound

    # ---- recency ---------------------------------------------------------------------------------
    def touch(self, workspace_id: str) -> None:
        self.last_used[workspace_id] = max(self.last_used.get(workspace_id, 0.0), time.time())

    def forget(self, workspace_id: str) -> None:
        self.last_used.pop(workspace_id, None)
        self.bound_at.pop(workspace_id, None)
        self.failing.discard(workspace_id)

    def bound(self, workspace_id: str) -> None:
        self.bound_at[workspace_id] = time.monotonic()
        self.touch(workspace_id)

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
    def alive_nodes(self) -> set[str]:
        expires, nodes = self._nodes
        if time.monotonic() >= expires:
            nodes = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
            self._nodes = (time.monotonic() + NODE_CACHE_S, nodes)
        return nodes

    def placement_of(self, recorded_node: str | None) -> tuple[str | None, str]:
        """The node to bind the workspace on (None: any), and why."""
        return placement(recorded_node, self.alive_nodes())

    def scheduling(self, recorded_node: str | None) -> tuple[dict, str]:
        """Actor options for the workspace's placement, and why."""
        node, why = self.placement_of(recorded_node)
        if node is None:
            return {}, why
        # Ray 2.60 ignores a *soft* node affinity for an actor that requests no resources, so
        # a placed actor asks for a token CPU share (soft: when the node is gone, Ray restarts
        # the actor elsewhere, where it restores from the snapshot store).
        return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=True),
                "num_cpus": PLACED_ACTOR_CPUS}, why
