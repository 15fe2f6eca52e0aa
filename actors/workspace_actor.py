"""WorkspaceActor: the only owner of one workspace's SQLite file (a Durable Object on Ray).

Writes go onto the group-commit writer's queue (one thread, one connection); each caller is
answered after the batch holding its write committed. Reads run on a small thread pool with
read-only connections. The event loop never touches SQLite.

Durability (issue 7): the file, writer, readers and snapshot scheduler live in a
`WorkspaceHost`; a `CallGate` admits calls, holds them while a restore swaps the file, and
refuses them (`hibernating`, not run, safe to resend) once the actor hibernates. The actor
reports its node (placement) and every snapshot attempt to the directory, fire-and-forget.

Every answer is an envelope, never a raised exception, so the ingress can tell engine errors
from actor failures: `{"ok": True, "result": ..., "timings": {...}}` or
`{"ok": False, "error": <MiniSphereError>, "timings": {...}}`. Timings (milliseconds):
`queue_ms` (waiting for the writer / a reader thread), `engine_ms` (the transaction, or the
read), `batch` (writes committed together), `actor_ms` (inside this actor, end to end).
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
import warnings
from pathlib import Path

import ray

from minisphere.durability_config import DurabilityConfig
from minisphere.errors import NotFound
from minisphere.http_errors import as_named_error
from minisphere.service_contracts import verified_contracts
from minisphere.surface import METHODS
from minisphere.workspace_host import WorkspaceHost

from .call_gate import CallGate
from .due_notes import DueNotes

log = logging.getLogger("minisphere.workspace_actor")


def actor_name(workspace_id: str) -> str:
    return f"workspace:{workspace_id}"


def rss_bytes(pid: int | str = "self") -> int:
    """Resident memory of a process (this one by default), 0 where /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _settle(future: asyncio.Future, ok: bool, result, timings: dict) -> None:
    if future.cancelled():
        return
    if ok:
        future.set_result((result, timings))
    else:
        future.set_exception(result)


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0)
class WorkspaceActor:
    def __init__(self, workspace_id: str, path: str, synchronous: str = "FULL",
                 max_batch: int = 256, read_threads: int = 2, durability: dict | None = None,
                 vector: dict | None = None):
        logging.basicConfig(level=logging.INFO)
        self.workspace_id = workspace_id
        self.contracts = verified_contracts()   # a broken pin must not open the file
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        durability = dict(durability or {})
        settings = DurabilityConfig.from_dict(durability.get("config"))
        self.directory = durability.get("directory")      # handle, for reports (may be None)
        self.gate = CallGate(workspace_id)
        self.due = DueNotes(workspace_id, self.directory)   # the scheduler's skip rule
        self.host = WorkspaceHost(
            workspace_id, path, store=settings.make_store() if durability else None,
            synchronous=synchronous, max_batch=max_batch, read_threads=read_threads,
            every_writes=settings.snapshot_every_writes, every_s=settings.snapshot_every_s,
            keep=settings.snapshot_keep, pending_writes=int(durability.get("pending_writes", 0)),
            expect_snapshot=bool(durability.get("expect_snapshot")),
            on_follow_up=self._follow_up, on_snapshot_status=self._report_snapshot,
            workspace_options=self._vector_options(vector))
        self.node_id = ray.get_runtime_context().get_node_id()
        self.started_at = time.time()
        with warnings.catch_warnings():   # Ray's own property warns about its internals
            warnings.simplefilter("ignore", DeprecationWarning)
            self.restarted = ray.get_runtime_context().was_current_actor_reconstructed
        self.calls = 0
        self.last_call_at = self.started_at
        log.info("workspace %s open at %s (schema %s, restarted=%s, from %s)", workspace_id,
                 path, self.workspace.schema_version, self.restarted,
                 self.host.activation["source"])
        self._report("placed", self.node_id, self.host.activation)
        if self.host.activation["source"] == "snapshot":
            self.due.forget()          # opened from a snapshot: the recorded due state is stale

    # ---- the host's parts (they change when a restore reopens the file) -----------------------
    @property
    def workspace(self):
        return self.host.workspace

    @property
    def writer(self):
        return self.host.writer

    @property
    def reads(self):
        return self.host.reads

    def _report(self, method: str, *args) -> None:
        """Tell the directory something, fire-and-forget (never fails the caller)."""
        if self.directory is None:
            return
        try:
            getattr(self.directory, method).remote(self.workspace_id, *args)
        except Exception:  # noqa: BLE001
            log.warning("could not report %s to the directory", method, exc_info=True)

    def _report_snapshot(self, status: dict) -> None:
        self._report("snapshot_status", status)

    async def call(self, method_name: str, body: dict | None) -> dict:
        started = time.perf_counter()
        self.calls += 1
        self.last_call_at = time.time()
        timings: dict = {}
        try:
            method = METHODS.get(method_name)
            if method is None:
                raise NotFound(f"unknown method {method_name!r}")
            async with self.gate.admit():
                # issue 5: tell the control plane before a write can change what is due; the
                # write / pass is queued right after (no await in between), see due_notes.py
                if method.access == "maintenance":
                    await self.due.before_pass()
                elif method.access == "write":
                    await self.due.before_write(method_name)
                if self._engine_path(method_name):
                    result = await asyncio.to_thread(self.workspace.call, method_name, body)
                    if method.access != "read":
                        self.host.scheduler.note_writes(1)
                elif method.access == "read":
                    result, timings = await asyncio.wrap_future(
                        self.host.submit_read(method_name, body))
                else:
                    result, timings = await self._write(method_name, body or {})
        except Exception as exc:  # noqa: BLE001 - answered as a named error
            timings["actor_ms"] = (time.perf_counter() - started) * 1e3
            return {"ok": False, "error": as_named_error(exc), "timings": timings}
        timings["actor_ms"] = (time.perf_counter() - started) * 1e3
        return {"ok": True, "result": result, "timings": timings}

    def _follow_up(self, method_name: str, body: dict) -> None:
        """A read's small internal write (recall counts): queued, not awaited by the reader."""
        def done(ok, result, _timings):
            if not ok:
                log.warning("follow-up %s failed: %r", method_name, result)
        self.host.submit_write(method_name, body, done)

    def _engine_path(self, method_name: str) -> bool:
        """Calls a vector binding hooks (it embeds first) take the engine's own path."""
        vectors = getattr(self.workspace, "vectors", None)
        return vectors is not None and method_name in getattr(vectors, "hooked", ())

    async def _write(self, method_name: str, body: dict):
        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def done(ok, result, timings):
            loop.call_soon_threadsafe(_settle, future, ok, result, timings)
        self.host.submit_write(method_name, body, done)
        return await future

    @staticmethod
    def _vector_options(spec: dict | None) -> dict:
        """A vector binding embeds through the cluster's shared embedder, never a local model."""
        if spec is None:
            return {}
        from .embedder_actor import RemoteEmbedder, get_or_create_embedder
        namespace = ray.get_runtime_context().namespace
        return {"embedder": RemoteEmbedder(get_or_create_embedder(spec, namespace=namespace))}

    async def ping(self) -> dict:
        return {"workspace": self.workspace_id, "pid": os.getpid(), "nodeId": self.node_id}

    async def activity(self) -> dict:
        """What the directory needs to choose hibernation victims (cheap)."""
        snapshots = self.host.scheduler.status()
        return {"lastCallAt": self.last_call_at, "inflight": self.gate.inflight,
                "snapshotFailing": bool(snapshots["consecutiveFailures"]
                                        and snapshots["pendingWrites"])}

    # ---- durability ----------------------------------------------------------------------------
    async def _run(self, fn, *args) -> dict:
        try:
            return {"ok": True, "result": await asyncio.to_thread(fn, *args)}
        except Exception as exc:  # noqa: BLE001 - answered as a named error
            return {"ok": False, "error": as_named_error(exc)}

    async def snapshot(self, reason: str = "manual") -> dict:
        try:
            async with self.gate.admit():
                return await self._run(self.host.snapshot_now, reason)
        except Exception as exc:  # noqa: BLE001 - hibernating
            return {"ok": False, "error": as_named_error(exc)}

    async def restore(self, version: str | None) -> dict:
        """Point-in-time restore: hold new calls, let those in flight finish, swap, reopen."""
        try:
            async with self.gate.exclusive():
                answer = await self._run(self.host.restore, version)
        except Exception as exc:  # noqa: BLE001 - hibernating
            return {"ok": False, "error": as_named_error(exc)}
        if answer["ok"]:
            self._report("audit_event", "restore", {"version": answer["result"]["version"]})
            self.due.forget()          # the scheduler's recorded due state is about the old file
        return answer

    async def hibernate(self) -> dict:
        """Refuse new calls, finish those in flight, snapshot if changed, close. The directory
        kills the actor afterwards."""
        await self.gate.close_for_hibernation()
        return await asyncio.to_thread(self.host.hibernate)

    async def durability(self) -> dict:
        return {"nodeId": self.node_id, **self.host.status()}

    async def stats(self) -> dict:
        return {"workspace": self.workspace_id, "pid": os.getpid(), "rssBytes": rss_bytes(),
                "startedAt": self.started_at, "restarted": self.restarted, "calls": self.calls,
                "lastCallAt": self.last_call_at, "queueDepth": self.writer.depth,
                "batches": self.writer.batches, "writes": self.writer.writes,
                "largestBatch": self.writer.largest_batch, "contracts": self.contracts,
                "nodeId": self.node_id, "durability": self.host.status()}

    async def close(self) -> dict:
        """Commit what is queued, close every connection. The actor must be killed after."""
        await self.gate.close_for_hibernation()
        await asyncio.to_thread(self.host.close)
        return {"closed": self.workspace_id}
