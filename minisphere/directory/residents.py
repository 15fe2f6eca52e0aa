"""The resident table: one record per workspace whose actor is alive and bound, and the
work in flight that is about to change it (activations, hibernations, slots held under the cap).

Everything the directory knows about a resident lives in its `Resident` record and goes with
it: `forget` is the one way a workspace stops being resident, whether it hibernated, was
deleted, died or was retired. So the directory's state never grows past the live residents
(plus what is in flight) however many workspaces a long-running cluster has woken.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Literal, NotRequired, TypedDict

from minisphere.control.plane import ControlPlane
from minisphere.control.residency_policy import idle_residents
from minisphere.directory.actor_runtime import ActorRuntime, Handle
from minisphere.directory.flights import SingleFlight
from minisphere.wire.actor_methods import WorkspaceActorMethod
from minisphere.wire.residency import Activation, Hibernated

ACTIVITY_TIMEOUT_S = 0.5  # how long the directory waits for actors' last-call times
# how long an adopted actor has to say what it serves (it answers on its event loop)
ADOPTED_CONFIRM_TIMEOUT_S = 5.0
REFRESH_INTERVAL_S = 1.0  # actors' last-call times are asked for at most this often
# A workspace just bound keeps its slot this long: its first call is still on the way, and
# evicting it then would only wake it again (under more wakes than the cap, a livelock).
MIN_RESIDENCY_S = 2.0

# where a wake's process came from: a hibernated workspace's, a pre-started spare, a new one
WakeSource = Literal["recycled", "spare", "new"]


class Wake(TypedDict):
    """How a resident's wake went (milliseconds): `roomMs` and `wakeMs` once it is bound."""

    actor: WakeSource
    bindMs: float
    openMs: float | None
    roomMs: NotRequired[float]
    wakeMs: NotRequired[float]


@dataclass
class Resident:
    handle: Handle
    actor_name: str
    node_id: str | None = None
    last_used: float = field(default_factory=time.time)  # wall time of the last call
    bound_at: float = float("-inf")  # monotonic time it was bound (adopted: long ago)
    snapshot_failing: bool = False  # its snapshots fail: it stays to retry them
    inflight: int = 0  # calls running in it when last asked: not idle
    activation: Activation | None = None  # how its actor opened the file
    wake: Wake | None = None  # where its process came from, and how long the wake took
    placement: str | None = None  # why it runs where it runs
    # monotonic time since which every ask for its activity went unanswered (None: it answers)
    silent_since: float | None = None
    # taken over from a directory that died; not yet known to serve its workspace
    adopted: bool = False


class ResidentTable:
    def __init__(self, control: ControlPlane, runtime: ActorRuntime):
        self.control = control
        self.runtime = runtime
        self._residents: dict[str, Resident] = {}
        self.activations: SingleFlight[Handle] = SingleFlight()
        self.hibernations: SingleFlight[Hibernated] = SingleFlight()
        self._slots_held: set[str] = set()  # being bound, each holding a slot under the cap
        self._refreshed_at = float("-inf")

    # ---- the table -------------------------------------------------------------------------------
    def __contains__(self, workspace_id: str) -> bool:
        return workspace_id in self._residents

    def __len__(self) -> int:
        return len(self._residents)

    def get(self, workspace_id: str) -> Resident | None:
        return self._residents.get(workspace_id)

    def ids(self) -> list[str]:
        return list(self._residents)

    def add(self, workspace_id: str, resident: Resident) -> None:
        """Bound: the control plane already names its actor (recorded before the bind, so a
        crash mid-bind finds it)."""
        self._residents[workspace_id] = resident

    def forget(self, workspace_id: str) -> Resident | None:
        """It is no longer resident (whatever the reason): its record goes, and the control
        plane no longer names an actor for it. Returns the record it had."""
        resident = self._residents.pop(workspace_id, None)
        if self.control.exists(workspace_id):
            self.control.set_actor(workspace_id, None)
        return resident

    def adopt(self) -> int:
        """After a directory restart: workspace actors still alive count as resident, and any
        other workspace process is ended (returns how many). The spare pool and a hibernation
        under way died with the old directory: their processes belong to no one now, and
        nothing else would ever free them or their workspace slots."""
        bound: set[str] = set()
        for workspace_id, name in self.control.bound_actors():
            handle = self.runtime.find(name)
            if handle is None:
                self.control.set_actor(workspace_id, None)
                continue
            node = self.control.get(workspace_id)["nodeId"]
            self._residents[workspace_id] = Resident(handle, name, node_id=node, adopted=True)
            bound.add(name)
        orphans = [name for name in self.runtime.named_workspace_actors() if name not in bound]
        for name in orphans:
            handle = self.runtime.find(name)
            if handle is not None:
                self.runtime.kill(handle)
        return len(orphans)

    async def confirm_adopted(self, only: str | None = None) -> list[str]:
        """Ask adopted actors whether they serve their workspace (all, or `only` that one); let
        go of and end those that do not (the workspaces let go of). The control plane names an
        actor before its bind is sent, so a directory that died in between left a name whose
        process is still a spare, or whose bind failed: every call to it is refused as
        `hibernating`, and its callers would be sent back to it until they gave up. One that
        does not answer is left to the liveness guard."""
        adopted = {
            ws: r for ws, r in self._residents.items() if r.adopted and (only is None or ws == only)
        }

        async def confirm(workspace_id: str, resident: Resident) -> str | None:
            try:
                ready = await self.runtime.call(
                    resident.handle,
                    WorkspaceActorMethod.READY,
                    timeout_s=ADOPTED_CONFIRM_TIMEOUT_S,
                )
            except Exception:  # noqa: BLE001 - silent or dead: the liveness guard's case
                return None
            if self._residents.get(workspace_id) is not resident:
                return None  # let go of meanwhile
            if ready.get("bound") == workspace_id and ready.get("serving"):
                resident.adopted = False
                return None
            self.forget(workspace_id)
            self.runtime.kill(resident.handle)
            return workspace_id

        confirmed = await asyncio.gather(*(confirm(ws, r) for ws, r in adopted.items()))
        return [ws for ws in confirmed if ws is not None]

    def state_sizes(self) -> dict[str, int]:
        """How much per-workspace state the table holds (operators, tests)."""
        return {
            "residents": len(self._residents),
            "activations": len(self.activations),
            "hibernations": len(self.hibernations),
            "reserved": len(self._slots_held),
        }

    # ---- slots under the cap (`Hibernation.slot_for` is their one holder) -------------------------
    def hold_slot(self, workspace_id: str) -> None:
        if workspace_id in self._slots_held:  # one wake per workspace: activations share it
            raise RuntimeError(f"a slot under the cap is already held for {workspace_id}")
        self._slots_held.add(workspace_id)

    def release_slot(self, workspace_id: str) -> None:
        self._slots_held.remove(workspace_id)  # KeyError: released twice

    def slots_held(self) -> int:
        """Wakes being bound, each counted by the cap as a resident."""
        return len(self._slots_held)

    # ---- recency and place -------------------------------------------------------------------------
    def touch(self, workspace_id: str) -> None:
        resident = self._residents.get(workspace_id)
        if resident is not None:
            resident.last_used = max(resident.last_used, time.time())

    def located(self, workspace_id: str, node_id: str | None) -> None:
        """A resident workspace runs on this node (bound there, adopted, or restarted there)."""
        resident = self._residents.get(workspace_id)
        if resident is not None and node_id:
            resident.node_id = node_id

    def busy_nodes(self) -> set[str]:
        """Nodes holding at least one resident workspace."""
        return {r.node_id for r in self._residents.values() if r.node_id}

    def evictable(self, incoming: str, on_node: str | None = None) -> dict[str, float]:
        """Residents that may hibernate for room (those on `on_node` when given), with their
        last use: not the incoming one, not one bound within MIN_RESIDENCY_S."""
        now = time.monotonic()
        return {
            ws: r.last_used
            for ws, r in self._residents.items()
            if ws != incoming
            and now - r.bound_at >= MIN_RESIDENCY_S
            and on_node in (None, r.node_id)
        }

    def idle(self, idle_s: float) -> list[str]:
        """Idle residents: not those with a call running (a long write started before the idle
        time began is not idle), nor those whose snapshots are failing (their retries live
        there)."""
        last_used = {
            ws: r.last_used
            for ws, r in self._residents.items()
            if not r.snapshot_failing and not r.inflight
        }
        return idle_residents(last_used, time.time(), idle_s)

    def silent(self, for_s: float) -> dict[str, Resident]:
        """Residents none of whose asks for activity was answered for `for_s` or longer."""
        now = time.monotonic()
        return {
            ws: r
            for ws, r in self._residents.items()
            if r.silent_since is not None and now - r.silent_since >= for_s
        }

    async def refresh(self) -> None:
        """Ask every resident actor for its last call time (those that do not answer in time,
        e.g. still starting, keep the directory's own time). At most once per
        REFRESH_INTERVAL_S: under a stream of wakes it would otherwise ask every resident on
        every wake."""
        if time.monotonic() - self._refreshed_at < REFRESH_INTERVAL_S:
            return
        self._refreshed_at = time.monotonic()

        async def ask(workspace_id: str, resident: Resident) -> None:
            try:
                info = await self.runtime.call(
                    resident.handle, WorkspaceActorMethod.ACTIVITY, timeout_s=ACTIVITY_TIMEOUT_S
                )
            except Exception:  # noqa: BLE001 - slow or dead: handled at its next call
                # Not known to be idle, so not taken for it: an actor too busy (or a node too
                # loaded) to answer in time is most likely in use. Keeping the time of its
                # bind instead would make a loaded node evict the very workspaces its callers
                # are using, each eviction answered by a wake that evicts another (a thrash).
                if self._residents.get(workspace_id) is resident:
                    resident.last_used = max(resident.last_used, time.time())
                    if resident.silent_since is None:
                        resident.silent_since = time.monotonic()
                return
            if self._residents.get(workspace_id) is resident:  # still the same one
                resident.silent_since = None
                resident.last_used = max(resident.last_used, info["lastCallAt"])
                resident.snapshot_failing = bool(info.get("snapshotFailing"))
                resident.inflight = int(info.get("inflight", 0))

        await asyncio.gather(*(ask(ws, r) for ws, r in list(self._residents.items())))
