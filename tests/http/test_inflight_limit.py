"""The ingress replica's bound on requests held at once: past it a request is answered at once
with 503 `overloaded` and Retry-After, before the app runs; under it nothing changes. One
workspace's share of it never is the whole bound (tests/http/test_tenant_share.py runs it over
the real app)."""

from __future__ import annotations

import asyncio

import httpx
from hypothesis import given
from hypothesis import strategies as st

from minisphere.control.auth import WORKSPACE_ID_PATTERN
from minisphere.http.admission import (
    WORKSPACE_INFLIGHT_FLOOR,
    InflightLimit,
    workspace_of,
    workspace_share,
)


def held_app(gate: asyncio.Event, entered: list):
    async def app(scope, receive, send):
        entered.append(scope["path"])
        await gate.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    return app


def test_a_request_past_the_bound_is_refused_at_once_and_never_reaches_the_app():
    async def scenario():
        gate, entered = asyncio.Event(), []
        limit = InflightLimit(held_app(gate, entered), max_inflight=1)
        transport = httpx.ASGITransport(app=limit)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            first = asyncio.ensure_future(client.get("/first"))
            while not entered:
                await asyncio.sleep(0.001)
            refused = await client.get("/second")
            gate.set()
            return (await first), refused, entered, limit

    first, refused, entered, limit = asyncio.run(scenario())
    assert first.status_code == 200 and entered == ["/first"]
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    assert refused.json()["error"]["code"] == "overloaded"
    assert limit.refused == 1 and limit.inflight == 0


def test_no_bound_passes_every_request_through():
    async def scenario():
        gate, entered = asyncio.Event(), []
        gate.set()
        limit = InflightLimit(held_app(gate, entered), max_inflight=0)
        transport = httpx.ASGITransport(app=limit)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await asyncio.gather(*(client.get(f"/{n}") for n in range(20)))

    assert [r.status_code for r in asyncio.run(scenario())] == [200] * 20


@given(st.integers(min_value=1, max_value=100_000))
def test_no_workspace_share_is_the_whole_bound_once_the_bound_passes_the_floor(bound):
    share = workspace_share(bound)
    assert min(bound, WORKSPACE_INFLIGHT_FLOOR) <= share <= bound
    assert bound <= WORKSPACE_INFLIGHT_FLOOR or share < bound


@given(
    st.from_regex(WORKSPACE_ID_PATTERN, fullmatch=True),
    st.sampled_from(["/v1/w/", "/v1/workspaces/"]),
)
def test_a_request_counts_against_the_workspace_its_path_names(workspace, prefix):
    assert workspace_of(f"{prefix}{workspace}/anything") == workspace
    assert workspace_of(f"/v1/whoami/{workspace}") is None
