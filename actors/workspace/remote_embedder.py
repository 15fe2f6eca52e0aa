"""An embedding provider (name, dim, embed, submit) backed by the cluster's shared
`EmbedderActor`, so no workspace actor loads a model:

    handle = get_or_create_embedder({"provider": "minilm"})
    workspace = Workspace(path, embedder=RemoteEmbedder(handle))
"""
from __future__ import annotations

from concurrent.futures import Future

import numpy as np
import ray

REMOTE_TIMEOUT_S = 120.0         # a workspace gives up on one embed call after this


class RemoteEmbedder:
    """An embedding provider (name, dim, embed, submit) backed by the shared EmbedderActor.

    `embed` blocks (ray.get): the engine calls it from its reader and writer threads, never
    from an event loop. `submit` only sends the call and returns a Future at once: a recall
    sends its query before its lexical stages and the forward pass runs in the embedder's
    process meanwhile, with no thread of this process waiting on it. `timeout_s` is how long a
    caller should wait on either."""

    def __init__(self, handle, timeout_s: float = REMOTE_TIMEOUT_S):
        self.handle = handle
        self.timeout_s = timeout_s
        info = ray.get(handle.info.remote(), timeout=timeout_s)
        self.name, self.dim = info["name"], int(info["dim"])

    def embed(self, texts: list[str]) -> np.ndarray:
        return ray.get(self.handle.embed.remote(list(texts)), timeout=self.timeout_s)

    def submit(self, texts: list[str]) -> Future:
        """A Future of `embed(texts)`; an error of the embedder is the Future's exception."""
        return self.handle.embed.remote(list(texts)).future()
