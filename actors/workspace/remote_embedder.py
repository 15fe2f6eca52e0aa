"""An embedding provider (name, dim, embed, submit) backed by the cluster's shared
`EmbedderActor`, so no workspace actor loads a model:

    handle = get_or_create_embedder({"provider": "minilm"})
    workspace = Workspace(path, embedder=RemoteEmbedder(handle))
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future

import numpy as np
import ray

from actors.handles import Handle
from actors.sent_queries import Address

REMOTE_TIMEOUT_S = 120.0  # a workspace gives up on one embed call after this
# Query embeddings a caller sent ahead, kept until the recall asks for them; one the recall
# never asks for (its vector was cached) is pushed out by newer ones
ADOPTED_QUERIES_MAX = 64


class RemoteEmbedder:
    """An embedding provider (name, dim, embed, submit) backed by the shared EmbedderActor.

    `embed` blocks (ray.get): the engine calls it from its reader and writer threads, never
    from an event loop. `submit` only sends the call and returns a Future at once: a recall
    sends its query before its lexical stages and the forward pass runs in the embedder's
    process meanwhile, with no thread of this process waiting on it. `timeout_s` is how long a
    caller should wait on either.

    `address` (the embedder actor's name and namespace) lets a caller upstream send a recall's
    query to the same embedder before the call reaches this process (`adopt`): the embedding
    then starts a hop earlier, and `submit` hands over that call instead of sending its own."""

    def __init__(
        self, handle: Handle, timeout_s: float = REMOTE_TIMEOUT_S, address: Address | None = None
    ):
        self.handle = handle
        self.timeout_s = timeout_s
        self.address = address
        info = ray.get(handle.info.remote(), timeout=timeout_s)
        self.name, self.dim = info["name"], int(info["dim"])
        self._adopted: OrderedDict[str, ray.ObjectRef[np.ndarray]] = OrderedDict()
        self._adopted_lock = threading.Lock()  # submit runs on the engine's sending thread

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors: np.ndarray = ray.get(self.handle.embed.remote(list(texts)), timeout=self.timeout_s)
        return vectors

    def adopt(self, text: str, sent: ray.ObjectRef[np.ndarray]) -> None:
        """`sent` is this embedder's `embed([text])`, sent by the caller: the next `submit`
        of exactly [text] takes it instead of embedding the text again."""
        with self._adopted_lock:
            self._adopted[text] = sent
            while len(self._adopted) > ADOPTED_QUERIES_MAX:
                self._adopted.popitem(last=False)

    def submit(self, texts: list[str]) -> Future[np.ndarray]:
        """A Future of `embed(texts)`; an error of the embedder is the Future's exception."""
        sent = None
        if len(texts) == 1:
            with self._adopted_lock:
                sent = self._adopted.pop(texts[0], None)
        if sent is None:
            sent = self.handle.embed.remote(list(texts))
        return sent.future()
