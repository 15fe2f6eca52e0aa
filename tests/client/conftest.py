"""Fixtures of the client tests: the real FastAPI app over real engine workspaces
(`tests/support/engine_gateway.py`), reached by the client in process, without Ray.

`run(scenario)` runs `async def scenario(admin)` twice over (the fixture is parametrized): with
the sync `Client` (through a sync ASGI transport) and with the `AsyncClient` (through
`httpx.ASGITransport`). A scenario awaits every client call through `helpers.got(...)`, so one
scenario tests both doors."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from minisphere.client import AsyncClient, Client
from tests.support.engine_gateway import (
    ADMIN_TOKEN,
    BASE_URL,
    EngineGateway,
    SyncASGITransport,
    engine_api,
)


@pytest.fixture
def gateway(tmp_path, clock):
    engine = EngineGateway(tmp_path, clock=clock)
    yield engine
    engine.close()


@pytest.fixture
def api(gateway):
    return engine_api(gateway)


@pytest.fixture
def admin(api):
    """The sync client with the admin token."""
    with Client(BASE_URL, admin_token=ADMIN_TOKEN, transport=SyncASGITransport(api)) as client:
        yield client


@pytest.fixture(params=["sync", "async"])
def run(request, api):
    async def with_sync(scenario):
        with Client(BASE_URL, admin_token=ADMIN_TOKEN, transport=SyncASGITransport(api)) as client:
            return await scenario(client)

    async def with_async(scenario):
        async with AsyncClient(
            BASE_URL, admin_token=ADMIN_TOKEN, transport=httpx.ASGITransport(app=api)
        ) as client:
            return await scenario(client)

    door = with_sync if request.param == "sync" else with_async
    return lambda scenario: asyncio.run(door(scenario))
