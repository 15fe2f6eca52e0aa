"""Fixtures of the adapter tests: a live workspace of the real FastAPI app over real engine
files (`tests/support/engine_gateway.py`), reached by the HTTP client in process, without Ray.

`live` is a `Live` whose `ws` is the sync handle (what the frameworks' standard suites are
given: it serves their sync and async paths) and whose `async_handle()` makes an
`AsyncClient` handle on the calling event loop (what the tests of each adapter's async path use).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import httpx
import pytest

from minisphere.client import AsyncClient, Client
from minisphere.engine.clock import ManualClock
from tests.support.engine_gateway import (
    ADMIN_TOKEN,
    BASE_URL,
    EngineGateway,
    SyncASGITransport,
    engine_api,
)

WORKSPACE_ID = "agent-memory"
# the LangChain standard suites ask for 1 and 3 results: five entries answer the query
SEEDED = (
    ("SQLite keeps each workspace in one file", ["design", "db"]),
    ("SQLite runs in WAL mode so readers never wait for the writer", ["db"]),
    ("Backups of the SQLite file are snapshots taken by the durability layer", ["ops"]),
    ("The SQLite FTS5 index ranks keyword matches with BM25", ["search"]),
    ("Every SQLite write is acknowledged after its group commit", ["db"]),
)
QUERY = "sqlite"
# The LangChain standard suites leave their `async def` tests unmarked (LangChain runs
# pytest-asyncio in auto mode): a module holding them sets `pytestmark = ASYNC_SUITE`, which
# marks every test and silences pytest-asyncio's note on the sync ones.
ASYNC_SUITE = [
    pytest.mark.asyncio,
    pytest.mark.filterwarnings(
        "ignore:.*is marked with '@pytest.mark.asyncio' but it is not an async function"
    ),
]


@dataclass
class Live:
    api: object
    admin: Client
    token: str
    ws: object
    ids: list[str] = field(default_factory=list)
    scratched: int = 0  # scratch entries made so far (their texts differ)

    @contextlib.asynccontextmanager
    async def async_handle(self):
        async with AsyncClient(
            BASE_URL, admin_token=ADMIN_TOKEN, transport=httpx.ASGITransport(app=self.api)
        ) as client:
            yield client.workspace(WORKSPACE_ID, self.token)


def seed_entries(ws) -> list[str]:
    """Capture SEEDED (and link the first two) through any workspace handle; their ids."""
    ids = [ws.capture(text, tags=tags).id for text, tags in SEEDED]
    ws.link(ids[0], ids[1], "relates_to")
    return ids


@contextlib.contextmanager
def live_workspace(folder, *, seed: bool = True):
    gateway = EngineGateway(folder, clock=ManualClock())
    api = engine_api(gateway)
    try:
        with Client(BASE_URL, admin_token=ADMIN_TOKEN, transport=SyncASGITransport(api)) as admin:
            token = admin.create_workspace(WORKSPACE_ID).token
            live = Live(api, admin, token, admin.workspace(WORKSPACE_ID, token))
            if seed:
                live.ids = seed_entries(live.ws)
            yield live
    finally:
        gateway.close()


@pytest.fixture
def live(tmp_path):
    with live_workspace(tmp_path) as workspace:
        yield workspace


@pytest.fixture(scope="module")
def shared_live(tmp_path_factory):
    """One seeded workspace for a whole module (the standard suites run ~140 short tests)."""
    with live_workspace(tmp_path_factory.mktemp("shared")) as workspace:
        yield workspace


@pytest.fixture
def empty_live(tmp_path):
    with live_workspace(tmp_path, seed=False) as workspace:
        yield workspace
