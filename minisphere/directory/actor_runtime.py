"""What the directory's parts need of the runtime their workspace actors live in, as a
`typing.Protocol`: `RayActors` (`runtime.py`) is the service's, over Ray; the tests drive the
same parts with one that keeps its "actors" as objects in the process
(`tests/support/in_process_actors.py`). A handle is whatever the runtime's `start` and `find`
answer; the parts only pass it back to the runtime.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from minisphere.wire.actor_methods import WorkspaceActorMethod

Handle = Any
NodeResources = dict[str, Any]


class ActorGone(Exception):
    """The actor died, was killed, or could not be reached: nothing it answers will come."""


class ActorRuntime(Protocol):
    # ---- actors ----------------------------------------------------------------------------------
    def start(self, name: str, options: dict[str, Any], /) -> Handle:
        """A new, unbound workspace actor named `name`, started with `options`."""
        ...

    async def call(
        self,
        handle: Handle,
        method: WorkspaceActorMethod,
        /,
        *args: Any,
        timeout_s: float | None = None,
    ) -> Any:
        """`method(*args)` on the actor; `ActorGone` when it is gone, TimeoutError past
        `timeout_s`."""
        ...

    def kill(self, handle: Handle, /) -> None: ...

    def actor_id(self, handle: Handle, /) -> str: ...

    async def until_dead(self, handle: Handle, /) -> None:
        """Return once a killed actor can serve no call already on its way to it."""
        ...

    def has_process(self, handle: Handle, /) -> bool: ...

    def named_workspace_actors(self) -> list[str]: ...

    def find(self, name: str, /) -> Handle | None: ...

    # ---- work on every node, and the nodes -------------------------------------------------------
    async def on_every_node(
        self, fn: Callable[..., Any], args_for: Callable[[str], tuple[Any, ...]], /
    ) -> dict[str, Any]:
        """node -> `fn(*args_for(node))` run there, or the name of its failure."""
        ...

    def alive_nodes(self) -> dict[str, NodeResources]: ...

    def free_slots(self) -> dict[str, float]: ...

    def aimed_at(self, node_id: str, cpus: float, /) -> dict[str, Any]:
        """Actor options to start on `node_id` when it has room."""
        ...
