"""How the directory gives a workspace a process: a warm spare or a new actor, aimed at a node
with a free workspace slot, bound to the workspace's file under the resident cap; and how it
lets go of one that died or was retired.

A mixin of `DirectoryActor`: it uses the directory's settings, control plane, residency, spare
pool and its tables of resident actors (`_handles`, `_actor_names`, `_reserved`, ...).
"""
from __future__ import annotations

import asyncio
import logging
import time

import ray
from ray.exceptions import RayActorError

from actors.parts.residency import Placement
from actors.parts.spares import NoRoomForSpare, Spare
from actors.workspace_actor import WorkspaceActor, WorkspaceLaunch, new_actor_name
from minisphere.control.blueprints import parse_stored_blueprint
from minisphere.control.residency import lru_victims
from minisphere.errors import MiniSphereError, NotFound

log = logging.getLogger("minisphere.directory")
BIND_TIMEOUT_S = 120.0             # opening a file, restoring it from a snapshot if missing
# A new actor aimed at a node that is still not started after this long while that node has no
# free workspace slot is started elsewhere (starting 100 actors at once takes ~40 s on 2 CPUs,
# but then the slots are free; only a full node makes the wait endless).
PLACEMENT_STALL_S = 15.0
KILL_CONFIRM_TIMEOUT_S = 10.0      # waiting for Ray to report a retired actor dead
KILL_CONFIRM_POLL_S = 0.05
ROOM_WAIT_S = 0.01                 # re-check pause while other activations fill the cap


class WorkspaceBinding:
    def _actor_options(self, name: str, placement: dict | None = None) -> dict:
        return {"name": name, "namespace": self.settings.namespace, "lifetime": "detached",
                "max_restarts": -1, "max_task_retries": 0, "num_cpus": 0,
                **self.residency.slot_request(), **(placement or {})}

    async def _start_spare(self) -> Spare:
        """A new unbound workspace actor, once it is ready (where: `Residency.place_spare`)."""
        if self._reserved and self.residency.slot_request():
            # wakes are waiting for slots: a spare started now could take the one they need
            raise NoRoomForSpare("wakes first")
        placed = self.residency.place_spare(self.pool.started + self.pool.failed,
                                            self.pool.spares_per_node())
        name = new_actor_name()
        handle = self._new_workspace_actor(name, placed)
        try:
            info = await handle.ready.remote()
        except BaseException:
            # failed, or given up on (the pool's timeout cancels this): a detached actor left
            # behind would start some day and sit unbound, holding a slot, for good
            self._kill(handle)
            raise
        finally:
            self.residency.release(placed)
        return Spare(handle, name, info["nodeId"])

    def _new_workspace_actor(self, name: str, placed: Placement | None):
        options = self._actor_options(name, placed.options if placed else None)
        return WorkspaceActor.options(**options).remote(None, self._self, self._admin_hash)

    @staticmethod
    def _kill(handle) -> None:
        try:
            ray.kill(handle, no_restart=True)
        except Exception:  # noqa: BLE001 - already gone
            pass

    async def _drop_if_dead(self, workspace_id: str) -> None:
        """A caller saw the actor fail: forget it unless it is alive (restarting)."""
        name = self._actor_names.get(workspace_id)
        if name is None:
            return
        try:
            ray.get_actor(name, namespace=self.settings.namespace)
        except ValueError:
            self._forget_resident(workspace_id)

    def _forget_resident(self, workspace_id: str) -> None:
        self._handles.pop(workspace_id, None)
        self._actor_names.pop(workspace_id, None)
        self.residency.forget(workspace_id)
        self.control.set_actor(workspace_id, None)

    @staticmethod
    async def _until_dead(handle) -> None:
        """Wait (bounded) until Ray reports the killed actor dead: a call already on its way
        to it must fail, not be served by it."""
        deadline = time.monotonic() + KILL_CONFIRM_TIMEOUT_S
        while time.monotonic() < deadline:
            info = ray._private.state.actors(handle._actor_id.hex())
            if not info or info.get("State") == "DEAD":
                return
            await asyncio.sleep(KILL_CONFIRM_POLL_S)

    def _launch(self, workspace_id: str) -> WorkspaceLaunch:
        record = self.control.get(workspace_id)
        snap = self.control.durability(workspace_id)
        return WorkspaceLaunch(
            workspace_id, self.workspace_path(workspace_id), synchronous=self.settings.synchronous,
            max_batch=self.settings.max_batch, snapshots=self.settings.snapshots,
            generation=record["generation"],
            pending_writes=1 if snap["snapshotPending"] or not snap["lastSnapshotVersion"] else 0,
            expect_snapshot=bool(snap["lastSnapshotVersion"]),
            vector=parse_stored_blueprint(record["blueprint"]).bindings.vector)

    async def _bind(self, workspace_id: str):
        """Make room under the cap, take a spare on the node holding the file (or start an
        actor there), and bind it to the workspace."""
        if not self.control.exists(workspace_id):
            raise NotFound(f"no workspace {workspace_id}")
        if workspace_id in self._hibernating:          # its hibernation must finish first
            await asyncio.shield(self._hibernating[workspace_id])
        started = time.perf_counter()
        await self._make_room(workspace_id)
        room_ms = (time.perf_counter() - started) * 1e3
        try:
            handle = await self._bind_reserved(workspace_id)
        finally:
            self._reserved.discard(workspace_id)
        self._woken_from[workspace_id]["roomMs"] = round(room_ms, 3)
        self._woken_from[workspace_id]["wakeMs"] = round((time.perf_counter() - started) * 1e3, 3)
        return handle

    async def _bind_reserved(self, workspace_id: str):
        record = self.control.get(workspace_id)
        recorded, why = self.residency.placement_of(record["nodeId"])
        spare = self.pool.take(recorded) if self.pool.size else None
        if spare is None and recorded is None and self.pool.size:
            spare = self.pool.take()
        placed = None
        if spare is not None:
            handle, name, source = spare.handle, spare.name, "spare"
        else:
            name, source = new_actor_name(), "new"
            placed = self.residency.place(record["nodeId"])
            why = placed.why
            handle = self._new_workspace_actor(name, placed)
        self._placement[workspace_id] = why
        launch = self._launch(workspace_id)
        self.control.set_actor(workspace_id, name)      # before binding: a crash finds it
        bind_started = time.perf_counter()
        grants = tuple(self.control.grants(workspace_id))
        try:
            handle, name, answer = await self._bound(workspace_id, handle, name, placed,
                                                     launch, grants)
        except (TimeoutError, RayActorError) as exc:
            self.control.set_actor(workspace_id, None)
            self._kill(handle)
            raise MiniSphereError(f"workspace {workspace_id} could not be opened: "
                                  f"{exc.__class__.__name__}") from None
        finally:
            if placed is not None:
                self.residency.release(placed)
        if not answer["ok"]:
            self.control.set_actor(workspace_id, None)
            self._kill(handle)                          # it may hold part of that workspace
            raise answer["error"]
        if tuple(self.control.grants(workspace_id)) != grants:   # changed while binding
            await handle.set_tokens.remote(tuple(self.control.grants(workspace_id)))
        self._handles[workspace_id] = handle
        self._actor_names[workspace_id] = name
        self._activation[workspace_id] = answer["result"]["activation"]
        self._woken_from[workspace_id] = {
            "actor": source, "bindMs": round((time.perf_counter() - bind_started) * 1e3, 3)}
        self.residency.bound(workspace_id, answer["result"]["nodeId"])
        self.control.set_state(workspace_id, "active")
        self.control.touch(workspace_id, answer["result"]["nodeId"])
        return handle

    async def _bound(self, workspace_id: str, handle, name: str, placed: Placement | None,
                     launch: WorkspaceLaunch, grants: tuple):
        """Bind the actor; (handle, name, answer). A new actor aimed at a node that filled up
        before it started (a wake racing it for the last slot) would wait there for good, so
        one still not started after PLACEMENT_STALL_S on a full node is replaced by one that
        may start anywhere: on another node, or on a new one the autoscaler adds for it."""
        started = time.monotonic()
        binding = asyncio.ensure_future(handle.bind.remote(launch, grants))
        if placed is not None and placed.node is not None:
            await asyncio.wait([binding], timeout=PLACEMENT_STALL_S)
            if not binding.done() and self.residency.stuck(handle, placed):
                log.warning("workspace %s: its actor waited %.0f s on the full node %s; "
                            "starting it elsewhere", workspace_id, PLACEMENT_STALL_S,
                            placed.node[:12])
                self.residency.release(placed)
                self._kill(handle)
                binding.cancel()
                name = new_actor_name()
                self._placement[workspace_id] = "its node filled up before it started"
                self.control.set_actor(workspace_id, name)
                handle = self._new_workspace_actor(name, None)
                binding = asyncio.ensure_future(handle.bind.remote(launch, grants))
        try:
            remaining = max(0.0, BIND_TIMEOUT_S - (time.monotonic() - started))
            answer = await asyncio.wait_for(binding, remaining)
        except (TimeoutError, RayActorError):
            self._kill(handle)              # the replacement, when there was one
            raise
        return handle, name, answer

    def _over_cap(self) -> int:
        """How many actors the incoming one would put above the cap, counting those with a
        reserved slot being bound and those still hibernating (all hold a process)."""
        return (len(self._handles) + len(self._hibernating) + len(self._reserved) + 1
                - self.residency.max_resident)

    async def _make_room(self, incoming: str) -> None:
        """Hibernate least recently used residents until the incoming one fits the cap, then
        reserve its slot (released by `_bind` once it is bound or has failed)."""
        if self._over_cap() > 0:
            await self.residency.refresh(self._handles)
        while (over := self._over_cap()) > 0:
            evictable = self.residency.evictable(self._handles, incoming)
            victims = lru_victims(evictable, max(0, len(evictable) - over))
            if victims:
                await asyncio.gather(*(self.hibernate(victim, "lru") for victim in victims))
            elif self._hibernating:
                await asyncio.wait([asyncio.shield(f) for f in self._hibernating.values()],
                                   return_when=asyncio.FIRST_COMPLETED)
            else:          # the room is held by activations or by workspaces just bound
                await asyncio.sleep(ROOM_WAIT_S)
        self._reserved.add(incoming)
