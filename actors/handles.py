"""A Ray actor handle as the type checker sees it: Ray makes an actor's methods at run time
(its `ActorHandle` types every one as `Never`), so a handle is typed by what every call through
one is, `handle.method.remote(*args)` answering an `ObjectRef`."""

from __future__ import annotations

from typing import Any, Protocol

from ray import ObjectRef


class RemoteMethod(Protocol):
    def remote(self, *args: Any, **kwargs: Any) -> ObjectRef[Any]: ...


class Handle(Protocol):
    """Any actor's handle (a workspace actor's, the directory's, an embedder's)."""

    def __getattr__(self, method: str, /) -> RemoteMethod: ...
