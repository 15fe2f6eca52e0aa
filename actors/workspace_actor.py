"""WorkspaceActor: the only owner of one workspace's SQLite file (a Durable Object on Ray).

Writes go onto the group-commit writer's queue (one thread, one connection); each caller is
answered after the batch holding its write committed. Reads run on a small thread pool with
read-only connections. The event loop never touches SQLite.

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

from minisphere.group_commit import GroupCommitWriter
from minisphere.http_errors import as_named_error
from minisphere.read_pool import ReadPool
from minisphere.service_contracts import verified_contracts
from minisphere.errors import NotFound
from minisphere.surface import METHODS
from minisphere.workspace import Workspace

log = logging.getLogger("minisphere.workspace_actor")


def actor_name(workspace_id: str) -> str:
    return f"workspace:{workspace_id}"


def rss_bytes() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
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
                 max_batch: int = 256, read_threads: int = 2):
        logging.basicConfig(level=logging.INFO)
        self.workspace_id = workspace_id
        self.contracts = verified_contracts()   # a broken pin must not open the file
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.workspace = Workspace(path, synchronous=synchronous)
        self.writer = GroupCommitWriter(self.workspace, max_batch, name=workspace_id)
        self.reads = ReadPool(path, threads=read_threads, on_follow_up=self._follow_up)
        self.started_at = time.time()
        with warnings.catch_warnings():   # Ray's own property warns about its internals
            warnings.simplefilter("ignore", DeprecationWarning)
            self.restarted = ray.get_runtime_context().was_current_actor_reconstructed
        self.calls = 0
        self.last_call_at = self.started_at
        log.info("workspace %s open at %s (schema %s, restarted=%s)", workspace_id, path,
                 self.workspace.schema_version, self.restarted)

    async def call(self, method_name: str, body: dict | None) -> dict:
        started = time.perf_counter()
        self.calls += 1
        self.last_call_at = time.time()
        timings: dict = {}
        try:
            method = METHODS.get(method_name)
            if method is None:
                raise NotFound(f"unknown method {method_name!r}")
            if self._engine_path(method_name):
                result = await asyncio.to_thread(self.workspace.call, method_name, body)
            elif method.access == "read":
                result, timings = await asyncio.wrap_future(self.reads.submit(method_name, body))
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
        self.writer.submit(method_name, body, done)

    def _engine_path(self, method_name: str) -> bool:
        """Calls a vector binding hooks (it embeds first) take the engine's own path."""
        vectors = getattr(self.workspace, "vectors", None)
        return vectors is not None and method_name in getattr(vectors, "hooked", ())

    async def _write(self, method_name: str, body: dict):
        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def done(ok, result, timings):
            loop.call_soon_threadsafe(_settle, future, ok, result, timings)
        self.writer.submit(method_name, body, done)
        return await future

    async def ping(self) -> dict:
        return {"workspace": self.workspace_id, "pid": os.getpid()}

    async def stats(self) -> dict:
        return {"workspace": self.workspace_id, "pid": os.getpid(), "rssBytes": rss_bytes(),
                "startedAt": self.started_at, "restarted": self.restarted, "calls": self.calls,
                "lastCallAt": self.last_call_at, "queueDepth": self.writer.depth,
                "batches": self.writer.batches, "writes": self.writer.writes,
                "largestBatch": self.writer.largest_batch, "contracts": self.contracts}

    async def close(self) -> dict:
        """Commit what is queued, close every connection. The actor must be killed after."""
        await asyncio.to_thread(self.writer.close)
        await asyncio.to_thread(self.reads.close)
        await asyncio.to_thread(self.workspace.close)
        return {"closed": self.workspace_id}
