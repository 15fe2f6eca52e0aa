"""A runtime for the directory's parts that keeps its workspace "actors" in this process: each
one opens its workspace with the real host (the real SQLite file, snapshots to the real store)
and hibernates it the way the Ray actor does, so the directory's bookkeeping can be driven
through thousands of wakes in seconds, with no process start per wake. It implements
`minisphere.directory.actor_runtime.ActorRuntime`, as `RayActors` does; one node, which advertises
`node_resources`. An actor asking for a resource no node has never starts, as in Ray: its calls
wait until it is killed."""

from __future__ import annotations

import asyncio
import itertools
import os
import time

from minisphere.directory.actor_runtime import ActorGone
from minisphere.durability.stores import open_snapshot_store
from minisphere.hosting.host import WorkspaceHost
from minisphere.hosting.host_options import HostTuning, KnownState
from minisphere.reply import Reply
from minisphere.settings import WORKSPACE_SLOT_RESOURCE, SnapshotSettings
from minisphere.wire.actor_methods import WorkspaceActorMethod
from minisphere.wire.residency import BindAnswer, HibernationReport, ProcessReport

NODE = "in-process-node"


class InProcessWorkspaceActor:
    _ids = itertools.count()

    def __init__(self, name: str, startable: bool = True, bind_gate: asyncio.Event | None = None):
        self.name = name
        self.bind_gate = bind_gate  # a test holds binds here to race them
        self.hibernate_gate: asyncio.Event | None = None  # ... and a hibernation here
        self.hibernate_failure: BaseException | None = None  # its hibernate call raises it
        self.started = asyncio.Event()
        if startable:
            self.started.set()
        self.actor_id = f"actor-{next(self._ids)}"
        self.host: WorkspaceHost | None = None
        self.grants: tuple = ()
        self.binds = 0  # workspaces it served and let go of
        self.killed = False
        self.inflight = 0  # calls a test says are running in it
        self.last_call_at = 0.0  # what it says of its last call
        self.activity_delay_s = 0.0  # a test makes it slow to say so (a busy node)
        self.staged_bytes = 0  # what a test says its restore has staged so far

    async def ready(self) -> dict:
        bound = self.host.workspace_id if self.host is not None else None
        return {"name": self.name, "nodeId": NODE, "bound": bound, "serving": bound is not None}

    async def bind(self, launch, grants=()) -> Reply[BindAnswer]:
        if self.host is not None:
            raise AssertionError(f"{self.name} bound twice")
        if self.bind_gate is not None:
            await self.bind_gate.wait()
        started = time.perf_counter()
        snapshots = launch.snapshots or SnapshotSettings()
        known = KnownState(
            generation=launch.generation,
            epoch=launch.epoch,
            position=launch.position,
            pending_writes=launch.pending_writes,
            expect_snapshot=launch.expect_snapshot,
        )
        self.host = await asyncio.to_thread(
            WorkspaceHost,
            launch.workspace_id,
            launch.path,
            store=open_snapshot_store(snapshots),
            known=known,
            tuning=HostTuning(
                synchronous=launch.synchronous, snapshots=snapshots, background=False
            ),
        )
        self.grants = tuple(grants)
        return Reply.done(
            {
                "activation": self.host.activation,
                "nodeId": NODE,
                "pid": os.getpid(),
                "openMs": (time.perf_counter() - started) * 1e3,
            }
        )

    async def opening(self) -> dict:
        return {"stagedBytes": self.staged_bytes}

    async def set_tokens(self, grants) -> None:
        self.grants = tuple(grants)

    async def activity(self) -> dict:
        await asyncio.sleep(self.activity_delay_s)
        return {
            "lastCallAt": self.last_call_at,
            "snapshotFailing": False,
            "inflight": self.inflight,
        }

    async def hibernate(self) -> HibernationReport:
        if self.hibernate_gate is not None:
            await self.hibernate_gate.wait()
        if self.hibernate_failure is not None:
            raise self.hibernate_failure
        result = await asyncio.to_thread(self.host.hibernate)
        self.host, self.grants = None, ()  # a spare again, as the Ray actor lets go
        self.binds += 1
        process: ProcessReport = {
            "binds": self.binds,
            "rssBytes": 0,
            "freshRssBytes": 0,
            "pid": os.getpid(),
            "nodeId": NODE,
        }
        return {**result, "process": process}


class InProcessActors:
    def __init__(self, node_resources: dict | None = None):
        self.node_resources = dict(node_resources or {})
        self.bind_gate: asyncio.Event | None = None  # set by a test: binds wait for it
        # set by a test: the next bind call fails with it, as a Ray call can for reasons of
        # Ray's own (a system error, an unreachable raylet) that are not the actor dying
        self.bind_failure: BaseException | None = None
        # set by a test: every bind of these workspaces fails with the exception named
        self.bind_failures: dict[str, BaseException] = {}
        # set by a test: what the node answers a task sent to every node instead of running
        # it (as Ray's runtime answers a node whose task failed or timed out)
        self.node_task_failure: str | None = None
        self.live: dict[str, InProcessWorkspaceActor] = {}
        self.started = 0
        # set by a test: this many of the next actors started wait for a process (as a Ray
        # actor waiting for a slot or a worker does) until the test sets their `started`
        self.held_starts = 0
        # as in Ray, a killed actor's slot shows free in the resource view only a little later
        self.slot_release_delay_s = 0.0
        self._releasing: dict[str, float] = {}  # killed actor -> when its slot shows free

    def start(self, name: str, options: dict) -> InProcessWorkspaceActor:
        self.started += 1
        wanted = options.get("resources") or {}
        startable = all(self.node_resources.get(r, 0) >= n for r, n in wanted.items())
        if self.held_starts > 0:
            self.held_starts -= 1
            startable = False
        actor = self.live[name] = InProcessWorkspaceActor(name, startable, self.bind_gate)
        return actor

    async def call(
        self, actor, method: WorkspaceActorMethod, *args, timeout_s: float | None = None
    ):
        failure = None
        if method == WorkspaceActorMethod.BIND:
            failure, self.bind_failure = self.bind_failure, None
            failure = failure or self.bind_failures.get(args[0].workspace_id)

        async def run():
            await actor.started.wait()
            if actor.killed:
                raise ActorGone("killed")
            if failure is not None:
                raise failure
            return await getattr(actor, method)(*args)

        if actor.killed:
            raise ActorGone("killed")
        return await asyncio.wait_for(run(), timeout_s)

    def kill(self, actor) -> None:
        actor.killed = True
        actor.started.set()  # a call waiting for it to start now fails
        if actor.host is not None and actor.host.writer is not None:
            actor.host.close()
        self.live.pop(actor.name, None)
        if self.slot_release_delay_s:
            self._releasing[actor.name] = time.monotonic() + self.slot_release_delay_s

    @staticmethod
    def actor_id(actor) -> str:
        return actor.actor_id

    async def until_dead(self, actor) -> None:
        return None

    @staticmethod
    def has_process(actor) -> bool:
        return actor.started.is_set()

    def named_workspace_actors(self) -> list[str]:
        return list(self.live)

    def find(self, name: str):
        return self.live.get(name)

    def alive_nodes(self) -> dict[str, dict]:
        return {NODE: dict(self.node_resources)}

    async def on_every_node(self, fn, args_for, timeout_s: float | None = None) -> dict:
        if self.node_task_failure is not None:
            return {NODE: self.node_task_failure}
        return {NODE: await asyncio.to_thread(fn, *args_for(NODE))}

    def free_slots(self) -> dict[str, float]:
        """As Ray counts them: every live actor holds one slot of the advertised ones."""
        advertised = self.node_resources.get(WORKSPACE_SLOT_RESOURCE, 0)
        now = time.monotonic()
        self._releasing = {name: at for name, at in self._releasing.items() if at > now}
        held = len(self.live) + len(self._releasing)
        return {NODE: max(0, advertised - held) if advertised else 0}

    @staticmethod
    def aimed_at(node_id: str, cpus: float) -> dict:
        return {}
