"""EmbedderActor: one shared embedding service per cluster, so no workspace actor loads a model.

Named per provider spec (`embedder:<provider>[:<model>][:<dim>][:<endpoint digest>]`), detached,
created with get-if-exists, so restarts and many callers never make a second copy. It loads the
model once and embeds batches: a request that finds the embedder idle starts a forward pass at
once (a recall's query vector must not wait for company: its wait is part of a bound recall's
latency), and the requests arriving while a pass runs are coalesced into the next one, at most
MAX_BATCH_TEXTS texts (the model call runs on a worker thread, off the event loop).

Workspace actors use it through `actors.workspace.remote_embedder.RemoteEmbedder`, a provider
object (name, dim, embed) that the engine's Workspace accepts as `embedder=`.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import time
from typing import Any

import numpy as np
import ray
from typing_extensions import TypedDict

from actors.handles import Handle
from actors.process_logging import log_to_stderr
from minisphere.wire import LOCAL_PROVIDERS

log = logging.getLogger("minisphere.embedder")

EMBEDDER_NUM_CPUS = 0.5  # the model's forward pass is CPU work: reserve half a core
MAX_BATCH_TEXTS = 256  # texts per forward pass at most


class EmbedderInfo(TypedDict):
    """What an embedder tells of itself: its model, and the work it has done."""

    name: str
    dim: int
    pid: int
    spec: dict[str, Any]  # the provider spec, without a literal key
    calls: int
    texts: int
    batches: int  # forward passes
    embedSeconds: float


def embedder_name(spec: dict[str, Any]) -> str:
    """One embedder per distinct provider spec: workspaces bound to the same provider with
    other dimensions, or to another endpoint (its URL and key variable, digested), must never
    share one, which would hand them vectors of the wrong size or from the wrong service."""
    parts = ["embedder", spec["provider"], *([spec["model"]] if spec.get("model") else [])]
    if spec.get("dim"):
        parts.append(str(spec["dim"]))
    endpoint = "|".join(str(spec.get(key) or "") for key in ("url", "apiKeyEnv"))
    if endpoint.strip("|"):
        parts.append(hashlib.sha256(endpoint.encode()).hexdigest()[:12])
    return ":".join(parts)


# Ray's typed overloads of remote() list task options only, not an actor's max_concurrency
@ray.remote(max_restarts=-1, max_task_retries=1, max_concurrency=64)  # type: ignore[call-overload]
class EmbedderActor:
    def __init__(self, spec: dict[str, Any]):
        log_to_stderr()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from minisphere.engine.embedding import make_provider

        started = time.perf_counter()
        self.provider = make_provider(spec)
        self.spec = {k: v for k, v in spec.items() if k not in ("apiKey",)}
        self.calls = self.texts = self.batches = 0
        self.embed_s = 0.0
        self._pending: list[tuple[list[str], asyncio.Future[np.ndarray]]] = []
        self._flusher: asyncio.Task[None] | None = None
        log.info(
            "embedder %s (%d dims) loaded in %.1f s",
            self.provider.name,
            self.provider.dim,
            time.perf_counter() - started,
        )

    async def info(self) -> EmbedderInfo:
        return {
            "name": self.provider.name,
            "dim": self.provider.dim,
            "pid": os.getpid(),
            "spec": self.spec,
            "calls": self.calls,
            "texts": self.texts,
            "batches": self.batches,
            "embedSeconds": round(self.embed_s, 3),
        }

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if not texts:
            return np.zeros((0, self.provider.dim), dtype=np.float32)
        future: asyncio.Future[np.ndarray] = asyncio.get_running_loop().create_future()
        self._pending.append((list(texts), future))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        return await future

    async def _flush(self) -> None:
        await asyncio.sleep(0)  # requests delivered in the same turn of the loop go together
        while self._pending:
            group: list[tuple[list[str], asyncio.Future[np.ndarray]]] = []
            size = 0
            while self._pending and (
                not group or size + len(self._pending[0][0]) <= MAX_BATCH_TEXTS
            ):
                texts, future = self._pending.pop(0)
                group.append((texts, future))
                size += len(texts)
            flat = [t for texts, _ in group for t in texts]
            started = time.perf_counter()
            try:
                matrix = await asyncio.to_thread(self.provider.embed, flat)
            except Exception as exc:  # noqa: BLE001 - every waiter gets the error
                for _, future in group:
                    if not future.done():
                        future.set_exception(exc)
                continue
            self.embed_s += time.perf_counter() - started
            self.batches += 1
            self.texts += len(flat)
            offset = 0
            for texts, future in group:
                if not future.done():
                    future.set_result(matrix[offset : offset + len(texts)])
                offset += len(texts)


def get_or_create_embedder(
    spec: dict[str, Any], namespace: str | None = None, num_cpus: float | None = None
) -> Handle:
    """The cluster's one embedder for this provider spec (named, detached, get-if-exists).
    Pass secrets as {"apiKeyEnv": "VAR"} (read inside the actor), not as a literal key. Only
    a local model reserves CPU (`num_cpus`, default EMBEDDER_NUM_CPUS): an endpoint's or the
    test provider's embedder computes nothing here, and reserving a core for each would let
    a few of them hold every core and leave the next actor waiting for good."""
    if num_cpus is None:
        num_cpus = EMBEDDER_NUM_CPUS if spec["provider"] in LOCAL_PROVIDERS else 0
    # mypy keeps a decorated class's own type: Ray's ActorClass (and its .options) is unseen
    embedder: Handle = EmbedderActor.options(  # type: ignore[attr-defined]
        name=embedder_name(spec),
        namespace=namespace,
        lifetime="detached",
        get_if_exists=True,
        num_cpus=num_cpus,
    ).remote(spec)
    return embedder
