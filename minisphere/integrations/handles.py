"""Calling a workspace handle from a framework's sync or async path.

The adapters accept any object with the client's method names (`recall`, `capture`, `call`,
...): the sync and async HTTP handles and the in-cluster ones. A sync handle serves both paths
(the async path runs it on a worker thread, so the event loop never blocks on HTTP); an async
handle serves only the async path, because its connections belong to the loop that made them
and cannot be driven from another one.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from pydantic import BaseModel

ASYNC_ONLY = (
    "this workspace handle is asynchronous (AsyncClient.workspace or the async "
    "in-cluster client); use the framework's async path (ainvoke, abatch, aget, ...) "
    "or pass a sync handle"
)


def is_async(handle: Any) -> bool:
    """True when the handle's calls are coroutines. The client's handles route every method
    through one `_run`, which says it for all of them; other objects are judged by `call`."""
    run = getattr(type(handle), "_run", None)
    if run is not None:
        return inspect.iscoroutinefunction(run)
    return inspect.iscoroutinefunction(getattr(handle, "call", None))


def call(handle: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """`handle.method(*args, **kwargs)` from sync code."""
    if is_async(handle):
        raise ValueError(ASYNC_ONLY)
    return getattr(handle, method)(*args, **kwargs)


async def acall(handle: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """`handle.method(*args, **kwargs)` from async code, whichever kind the handle is."""
    if is_async(handle):
        return await getattr(handle, method)(*args, **kwargs)
    return await asyncio.to_thread(getattr(handle, method), *args, **kwargs)


def as_wire(value: Any) -> Any:
    """An answer as the service sent it (camelCase dicts): the client parses some answers into
    pydantic models (whose extra fields keep their wire names), other handles may not."""
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True)
    if isinstance(value, list):
        return [as_wire(v) for v in value]
    return value
