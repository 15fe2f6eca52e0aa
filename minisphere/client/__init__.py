"""Typed Python client of the Mini-Sphere HTTP service (sync and async; httpx + pydantic).

It imports nothing of the server, so an agent can use it with only httpx and pydantic.
"""

from minisphere.client.client import DEFAULT_URL, AsyncClient, Client
from minisphere.client.exchange import (
    OVERLOAD_RETRIES,
    OVERLOAD_RETRY_MAX_WAIT_S,
    OverloadRetry,
    ServiceError,
)
from minisphere.client.workspace import AsyncWorkspaceClient, WorkspaceClient

__all__ = [
    "DEFAULT_URL",
    "OVERLOAD_RETRIES",
    "OVERLOAD_RETRY_MAX_WAIT_S",
    "AsyncClient",
    "AsyncWorkspaceClient",
    "Client",
    "OverloadRetry",
    "ServiceError",
    "WorkspaceClient",
]
