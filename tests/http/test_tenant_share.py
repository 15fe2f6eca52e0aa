"""No workspace takes every slot of the ingress's bound on requests held at once: the real app
over real engine workspaces, in process. One workspace holding requests open (bodies that never
finish arriving) is refused with 503 `overloaded` past its share while another workspace's call
is answered; the MCP endpoint's `GET` (a stream that would never end in a stateless server) is
answered 405 at once and keeps no slot."""

from __future__ import annotations

import asyncio
import json

import httpx

from minisphere.http.app import build_api
from tests.support.engine_gateway import EngineGateway

SLOTS = 64  # the replica's bound in these tests


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


async def held_body(entered: asyncio.Event, gate: asyncio.Event):
    """A request body whose bytes arrive only once `gate` is set (a slow client)."""
    entered.set()
    await gate.wait()
    yield json.dumps({"content": "held until released"}).encode()


async def hold_until_refused(client, url, headers, gate) -> tuple[list, httpx.Response | None]:
    """Requests to `url` held in the app one at a time, until one is refused or `SLOTS` are
    held: (the held requests' tasks, the refusal)."""
    held = []
    for _ in range(SLOTS):
        entered = asyncio.Event()
        task = asyncio.ensure_future(
            client.post(url, headers=headers, content=held_body(entered, gate))
        )
        await asyncio.wait(
            {task, asyncio.ensure_future(entered.wait())}, return_when=asyncio.FIRST_COMPLETED
        )
        if task.done():
            return held, task.result()
        held.append(task)
    return held, None


def test_one_workspace_holding_slow_bodies_leaves_slots_for_another(tmp_path):
    gateway = EngineGateway(tmp_path)
    greedy, other = gateway.create_now(), gateway.create_now()
    api = build_api(gateway, [], max_inflight=SLOTS)

    async def scenario():
        gate = asyncio.Event()
        transport = httpx.ASGITransport(app=api)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            url = f"/v1/w/{greedy['workspace']['id']}/capture"
            held, refused = await hold_until_refused(client, url, bearer(greedy["token"]), gate)
            answered = await client.post(
                f"/v1/w/{other['workspace']['id']}/getCount",
                json={},
                headers=bearer(other["token"]),
            )
            gate.set()
            return held, refused, answered, await asyncio.gather(*held)

    try:
        held, refused, answered, released = asyncio.run(scenario())
    finally:
        gateway.close()
    assert refused is not None, f"one workspace held all {len(held)} slots"
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    assert refused.json()["error"]["code"] == "overloaded"
    assert 0 < len(held) < SLOTS
    assert answered.status_code == 200, answered.text
    assert [r.status_code for r in released] == [200] * len(held)


def raw_get(path: str, token: str) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"accept", b"text/event-stream"),
            (b"authorization", f"Bearer {token}".encode()),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }


def test_mcp_get_is_refused_405_at_once_and_keeps_no_slot(tmp_path):
    """With a bound of one request held at once, a tenant's MCP `GET` (what opens a server's
    event stream) must be answered and gone before another tenant's call arrives."""
    gateway = EngineGateway(tmp_path)
    streamer, other = gateway.create_now(), gateway.create_now()
    api = build_api(gateway, [], max_inflight=1)

    async def scenario():
        messages, started, connected = [], asyncio.Event(), asyncio.Event()

        async def receive():
            if not messages:
                return {"type": "http.request", "body": b"", "more_body": False}
            await connected.wait()  # the caller stays connected
            return {"type": "http.disconnect"}

        async def send(message):
            messages.append(message)
            if message["type"] == "http.response.start":
                started.set()

        async with api.router.lifespan_context(api):
            path = f"/v1/w/{streamer['workspace']['id']}/mcp"
            stream = asyncio.ensure_future(api(raw_get(path, streamer["token"]), receive, send))
            await asyncio.wait(
                {stream, asyncio.ensure_future(started.wait())},
                return_when=asyncio.FIRST_COMPLETED,
            )
            finished = stream.done()
            transport = httpx.ASGITransport(app=api)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                answered = await client.post(
                    f"/v1/w/{other['workspace']['id']}/getCount",
                    json={},
                    headers=bearer(other["token"]),
                )
            connected.set()
            stream.cancel()
            return messages, finished, answered

    try:
        messages, finished, answered = asyncio.run(scenario())
    finally:
        gateway.close()
    start = next(m for m in messages if m["type"] == "http.response.start")
    headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    assert start["status"] == 405 and headers.get("allow") == "POST"
    assert finished, "the GET was still held after its answer began"
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
    assert json.loads(body)["error"]["code"] == "method_not_allowed"
    assert answered.status_code == 200, answered.text
