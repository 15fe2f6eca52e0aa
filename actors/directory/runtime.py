"""The directory's one doorway to Ray: starting, calling, killing and finding workspace actors,
and what the cluster says about its nodes and their free workspace slots.

Every other part of the directory works through an `ActorRuntime` (`actor_runtime.py`), which
`RayActors` implements, so none of them holds Ray's API in its logic, and the parts can be driven
in one process, with real workspace files, by a runtime that keeps its "actors" as objects.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import ray
from ray.actor import ActorClass
from ray.exceptions import RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from minisphere.directory.actor_runtime import ActorGone, Handle, NodeResources
from minisphere.directory.launch import ACTOR_NAME_PREFIX
from minisphere.settings import WORKSPACE_SLOT_RESOURCE
from minisphere.wire.actor_methods import WorkspaceActorMethod

KILL_CONFIRM_TIMEOUT_S = 10.0  # waiting for Ray to report a retired actor dead
KILL_CONFIRM_POLL_S = 0.05
NODE_CACHE_S = 2.0  # how long the list of live nodes is trusted
NODE_TASK_TIMEOUT_S = 120.0  # a task on every node (the sweep of its workspace copies)


class RayActors:
    def __init__(
        self,
        actor_class: ActorClass[Any],
        namespace: str,
        directory: Handle,
        admin_token_hash: str,
    ):
        self.actor_class = actor_class  # the workspace actor (a Ray actor class)
        self.namespace = namespace
        self.directory = directory  # this directory's own handle, for reports
        self.admin_token_hash = admin_token_hash
        self._nodes: tuple[float, dict[str, NodeResources]] = (0.0, {})

    # ---- actors ----------------------------------------------------------------------------------
    def start(self, name: str, options: dict[str, Any]) -> Handle:
        """A new, unbound workspace actor named `name` (it binds when told to)."""
        return self.actor_class.options(
            name=name,
            namespace=self.namespace,
            lifetime="detached",
            max_restarts=-1,
            max_task_retries=0,
            **{"num_cpus": 0, **options},
        ).remote(None, self.directory, self.admin_token_hash)

    @staticmethod
    async def call(
        handle: Handle, method: WorkspaceActorMethod, *args: Any, timeout_s: float | None = None
    ) -> Any:
        """`handle.method(*args)`; ActorGone when the actor is gone, TimeoutError past
        `timeout_s`."""
        try:
            return await asyncio.wait_for(getattr(handle, method).remote(*args), timeout_s)
        except RayActorError as exc:
            raise ActorGone(exc.__class__.__name__) from None

    @staticmethod
    def kill(handle: Handle) -> None:
        with contextlib.suppress(Exception):  # already gone
            ray.kill(handle, no_restart=True)

    @staticmethod
    def actor_id(handle: Handle) -> str:
        actor_id: str = handle._actor_id.hex()
        return actor_id

    def _state(self, handle: Handle) -> dict[str, Any]:
        state: dict[str, Any] = ray._private.state.actors(self.actor_id(handle)) or {}
        return state

    async def until_dead(self, handle: Handle) -> None:
        """Wait (bounded) until Ray reports the killed actor dead: a call already on its way
        to it must fail, not be served by it."""
        deadline = time.monotonic() + KILL_CONFIRM_TIMEOUT_S
        while time.monotonic() < deadline:
            state = self._state(handle)
            if not state or state.get("State") == "DEAD":
                return
            await asyncio.sleep(KILL_CONFIRM_POLL_S)

    def has_process(self, handle: Handle) -> bool:
        """The actor runs, or has a worker process starting (Ray reports its pid before it is
        ALIVE): slow to start, not waiting for room."""
        state = self._state(handle)
        return state.get("State") == "ALIVE" or bool(state.get("Pid"))

    def named_workspace_actors(self) -> list[str]:
        """The names of this namespace's live workspace actors: bound, spare, or left behind by
        a directory that died."""
        return [
            found["name"]
            for found in ray.util.list_named_actors(all_namespaces=True)
            if found["namespace"] == self.namespace and found["name"].startswith(ACTOR_NAME_PREFIX)
        ]

    def find(self, name: str) -> Handle | None:
        """The live actor of this name, or None."""
        try:
            return ray.get_actor(name, namespace=self.namespace)
        except ValueError:
            return None

    # ---- work on every node --------------------------------------------------------------------
    async def on_every_node(
        self,
        fn: Callable[..., Any],
        args_for: Callable[[str], tuple[Any, ...]],
        timeout_s: float = NODE_TASK_TIMEOUT_S,
    ) -> dict[str, Any]:
        """Run `fn(*args_for(node))` once on each live node (a task pinned there: a node's
        own disk is reachable only from it); node -> its answer, or the error's name."""
        task = ray.remote(num_cpus=0, max_retries=0)(fn)
        refs = {
            node: task.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)
            ).remote(*args_for(node))
            for node in self.alive_nodes()
        }
        answers: dict[str, Any] = {}
        for node, ref in refs.items():
            try:
                answers[node] = await asyncio.wait_for(ref, timeout_s)
            except Exception as exc:  # noqa: BLE001 - one node's failure is reported, not raised
                answers[node] = f"failed: {exc.__class__.__name__}"
        return answers

    # ---- nodes -----------------------------------------------------------------------------------
    def alive_nodes(self) -> dict[str, NodeResources]:
        """Live node -> its resources (cached for NODE_CACHE_S)."""
        expires, nodes = self._nodes
        if time.monotonic() >= expires:
            nodes = {n["NodeID"]: n.get("Resources") or {} for n in ray.nodes() if n.get("Alive")}
            self._nodes = (time.monotonic() + NODE_CACHE_S, nodes)
        return nodes

    @staticmethod
    def free_slots() -> dict[str, float]:
        """Node -> workspace slots Ray has not handed out (one GCS call)."""
        return {
            node: resources.get(WORKSPACE_SLOT_RESOURCE, 0)
            for node, resources in ray._private.state.available_resources_per_node().items()
        }

    @staticmethod
    def aimed_at(node_id: str, cpus: float) -> dict[str, Any]:
        """Actor options to start on this node if it has room, else on another. A soft
        affinity alone falls back only when the node is gone, not when it is full; and Ray
        2.60 ignores a soft affinity for an actor that asks for no resources, hence `cpus`."""
        return {
            "scheduling_strategy": NodeAffinitySchedulingStrategy(
                node_id, soft=True, _spill_on_unavailable=True
            ),
            "num_cpus": cpus,
        }
