"""A small gateway stand-in for tests of the HTTP layer, and a way to call the real FastAPI app
over real HTTP semantics (httpx through the ASGI interface, no server process).

The stand-in answers like an empty service and records every call that got past the HTTP
layer, so a test can tell that bad input never reached the gateway. `list_snapshots` reads a
real snapshot store when one is given."""

from __future__ import annotations

import asyncio
import functools
import logging

import httpx

from minisphere.durability.snapshots.manifest import list_snapshots
from minisphere.errors import Forbidden, Unauthenticated
from minisphere.http.app import build_api

ADMIN_TOKEN = "msa_admin-token-for-http-tests-0123456789"
WORKSPACE = "notes"
WORKSPACE_TOKEN = "msw_workspace-token-for-http-tests-0123456789"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
TENANT = {"Authorization": f"Bearer {WORKSPACE_TOKEN}"}


class StandInGateway:
    def __init__(self, snapshot_store=None, failure: Exception | None = None):
        self.calls: list[tuple] = []
        self.snapshot_store = snapshot_store
        self.failure = failure  # raised by every call that reaches a workspace

    @property
    def durability_admin(self) -> StandInGateway:
        """The stand-in answers the durability operations it knows (restore, list_snapshots)
        itself."""
        return self

    def is_admin(self, token: str) -> bool:
        return token == ADMIN_TOKEN

    async def require_admin(self, token: str, client: str = "") -> None:
        if not self.is_admin(token):
            raise Unauthenticated("this route needs the admin token")

    async def authorize(self, workspace: str, token: str, method: str, client: str = "") -> str:
        if self.is_admin(token):
            return "admin"
        if token != WORKSPACE_TOKEN:
            raise Unauthenticated("invalid token")
        if workspace != WORKSPACE:
            raise Forbidden("this token belongs to another workspace")
        return "tenant"

    async def call(self, workspace, method, args, caller, idempotency_key=None):
        self.calls.append(("call", workspace, method, args))
        if self.failure is not None:
            raise self.failure
        return {"ok": True}, {"engine_ms": 0.1}

    async def run_maintenance(self, workspace, method, args, caller):
        return await self.call(workspace, method, args, caller)

    async def create(self, workspace_id, blueprint, label):
        self.calls.append(("create", workspace_id, blueprint, label))
        return {"workspace": {"id": workspace_id or "ws-new"}, "token": "msw_new"}

    async def list(self, limit, after):
        self.calls.append(("list", limit, after))
        return []

    async def maintenance_runs(self, workspace, limit):
        self.calls.append(("runs", workspace, limit))
        return []

    async def restore(self, workspace_id, version):
        self.calls.append(("restore", workspace_id, version))
        return {"workspace": workspace_id, "version": version}

    async def list_snapshots(self, workspace_id):
        self.calls.append(("list_snapshots", workspace_id))
        if self.failure is not None:
            raise self.failure
        return await asyncio.to_thread(list_snapshots, self.snapshot_store, workspace_id)


class StandInTransfer:
    """The import/export operations: records chunks, exports one header line."""

    def __init__(self):
        self.chunks: list[tuple] = []

    async def export_pages(self, workspace_id):
        yield ['{"record":"header"}']

    async def import_chunk(self, workspace_id, key, header, lines, first, final):
        self.chunks.append((workspace_id, key, header, lines, first, final))
        return {
            "entries": 0,
            "edges": 0,
            "duplicateIds": 0,
            "duplicateContent": 0,
            "duplicateEdges": 0,
            "orphanEdges": 0,
            "applied": len(lines),
            "expected": 0,
        }


def make_api(gateway=None, transfer=None, observe=None):
    return build_api(gateway or StandInGateway(), [], transfer=transfer, observe=observe)


class Swappable:
    """Stands for whichever stand-in an example set: see `shared_api`."""

    def __init__(self, target):
        self.target = target

    def __getattr__(self, name: str):
        return getattr(self.target, name)


@functools.cache
def _shared() -> tuple:
    gateway, transfer = Swappable(StandInGateway()), Swappable(StandInTransfer())
    return build_api(gateway, [], transfer=transfer), gateway, transfer


def shared_api(gateway=None, transfer=None):
    """One app over the given stand-ins, built once for all the examples of the property tests:
    building an app (its routes' pydantic models) takes longer than an example's request."""
    api, gateway_slot, transfer_slot = _shared()
    gateway_slot.target = gateway or StandInGateway()
    transfer_slot.target = transfer or StandInTransfer()
    return api


def send(api, requests: list[tuple[str, str, dict]]) -> list[httpx.Response]:
    """Send (method, url, httpx keyword arguments) requests to the app, in order."""

    async def go():
        transport = httpx.ASGITransport(app=api)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return [await client.request(method, url, **kw) for method, url, kw in requests]

    return asyncio.run(go())


def one(api, method: str, url: str, **kw) -> httpx.Response:
    return send(api, [(method, url, kw)])[0]


def quiet_errors() -> None:
    """The unexpected-error log of a failing test is noise for tests that expect none."""
    logging.getLogger("minisphere.errors").setLevel(logging.ERROR)
