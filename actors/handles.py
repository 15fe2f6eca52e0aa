"""Ray's actors as the type checker sees them. Ray makes an actor's methods at run time (its
`ActorHandle` types every one as `Never`), so a handle is typed by what every call through one
is, `handle.method.remote(*args)` answering an `ObjectRef`."""

from __future__ import annotations

from typing import Any, Protocol

from ray import ActorID, ObjectRef
from ray.actor import ActorClass


class RemoteMethod(Protocol):
    def remote(self, *args: Any, **kwargs: Any) -> ObjectRef[Any]: ...


class Handle(Protocol):
    """Any actor's handle (a workspace actor's, the directory's, an embedder's)."""

    @property
    def _actor_id(self) -> ActorID: ...  # the only stable id of the actor

    def __getattr__(self, method: str, /) -> RemoteMethod: ...


def actor_class(decorated: object) -> ActorClass[Any]:
    """A `@ray.remote` class as what Ray made of it: mypy keeps the decorated class's own type,
    so Ray's `ActorClass` (its `.options`, its `.remote`) is unseen without this."""
    if not isinstance(decorated, ActorClass):
        raise TypeError(f"{decorated!r} is not a Ray actor class")
    return decorated
