"""Moving a resident workspace's vectors to another embedding provider while it serves.

The directory has already written the new binding into the workspace's blueprint; here the file
follows: bound to the new provider at once (its old vectors dropped, new writes embedded with
the new one), then every entry re-embedded in the background, in short transactions between the
calls. Until an entry is embedded again, recall ranks it by the lexical arms. A rebind cut short
(the process killed, the workspace hibernated) is finished at the next open, which re-embeds
whatever the blueprint's provider has not embedded yet. A second rebind supersedes the first.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from actors.workspace.opening import shared_embedder
from minisphere.errors import WorkspaceUnavailable
from minisphere.wire.stored_states import FileBinding, FileVectors, RebindProgress, RebindState

if TYPE_CHECKING:
    from actors.workspace.file_owner import FileOwner
    from actors.workspace.remote_embedder import RemoteEmbedder
    from minisphere.hosting.host import WorkspaceHost

log = logging.getLogger("minisphere.workspace")


@dataclass
class RebindRun:
    """One rebind: `state` is re-embedding, done, failed or superseded; `embedded` of
    `total` entries so far."""

    provider: str
    state: RebindState = "re-embedding"
    embedded: int = 0
    total: int | None = None
    error: str | None = None
    startedAt: float = field(default_factory=time.time)
    finishedAt: float | None = None

    def progress(self) -> RebindProgress:
        return {
            "provider": self.provider,
            "state": self.state,
            "embedded": self.embedded,
            "total": self.total,
            "error": self.error,
            "startedAt": self.startedAt,
            "finishedAt": self.finishedAt,
        }


class VectorRebinds:
    def __init__(self, owner: FileOwner):
        self.owner = owner
        self.last: RebindRun | None = None
        self._task: asyncio.Task[None] | None = None  # held: the loop keeps tasks only weakly

    async def start(self, spec: dict[str, Any]) -> FileBinding:
        """Begin moving the file to the binding `spec`; its state at once."""
        host = self.owner.host
        if host is None:
            raise WorkspaceUnavailable("the workspace is not open here; retry shortly")
        # imported here: a spare starts without the blueprints' models (few workspaces rebind)
        from minisphere.control.blueprints import VectorBindingSpec

        binding = VectorBindingSpec.model_validate(spec)
        embedder = shared_embedder(binding)
        progress = RebindRun(binding.provider)
        if self.last is not None and self.last.state == "re-embedding":
            self.last.state = "superseded"  # its backfill stops at its next batch
        self.last = progress

        def advanced(done: int, total: int) -> None:
            progress.embedded, progress.total = done, total

        self._task = asyncio.get_running_loop().create_task(
            self._run(host, embedder, progress, advanced)
        )
        await asyncio.sleep(0)  # let it begin before the state is read
        return await self.state()

    async def _run(
        self,
        host: WorkspaceHost,
        embedder: RemoteEmbedder,
        progress: RebindRun,
        advanced: Callable[[int, int], None],
    ) -> None:
        try:
            summary = await asyncio.to_thread(host.rebind_vectors, embedder, advanced)
        except Exception as exc:  # noqa: BLE001 - reported in the state; the next open finishes
            log.warning("rebind of %s to %s stopped: %r", host.workspace_id, progress.provider, exc)
            progress.state, progress.error = "failed", f"{type(exc).__name__}: {exc}"[:300]
        else:
            if progress.state == "re-embedding":
                progress.state = "done"
                progress.embedded = int(summary.get("embedded", progress.embedded))
        progress.finishedAt = time.time()

    async def state(self) -> FileBinding:
        """The file's binding (provider, dimensions, entries still without a vector) and the
        last rebind's progress."""
        host = self.owner.host
        workspace = host.workspace if host is not None else None
        vectors = workspace.vectors if workspace is not None else None
        file: FileVectors = {"provider": None, "dim": None, "missing": None}  # bound to none
        if vectors is not None:
            bound = await asyncio.to_thread(vectors.state)
            file = {"provider": bound["provider"], "dim": bound["dim"], "missing": bound["missing"]}
        return {"file": file, "rebind": self.last.progress() if self.last else None}
