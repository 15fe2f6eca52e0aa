"""The MCP SDK's own client against a Mini-Sphere endpoint, and one exercise of every tool.

    async with mcp_session(f"{url}/v1/w/{ws}/mcp", token) as session:
        await session.list_tools()

`session.call_tool` validates every answer that is not an error against the tool's published
output schema (the SDK does it), so a call that passes here answered what its schema says.
"""

from __future__ import annotations

import contextlib
import itertools
import json

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

WRITE_SCENARIO = ["capture", "append", "update", "setStatus", "link", "unlink", "forget"]
# A session's first request sent by hand (no SDK): what an endpoint's auth and its host and
# origin checks see first
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}


@contextlib.asynccontextmanager
async def mcp_session(url: str, token: str, transport: httpx2.AsyncBaseTransport | None = None):
    """An initialized session; `transport`: how its HTTP requests travel (default: the SDK's
    client, straight to `url`)."""
    headers = {"Authorization": f"Bearer {token}"}
    http = (
        create_mcp_http_client(headers=headers)
        if transport is None
        else httpx2.AsyncClient(headers=headers, transport=transport, timeout=60)
    )
    async with (
        http,
        streamable_http_client(url, http_client=http, terminate_on_close=False) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session


class Alternating(httpx2.AsyncBaseTransport):
    """Sends each request to the next of `ports` on the same host in turn, as a load balancer
    in front of several ingress replicas would; `sent` is the port of each request."""

    def __init__(self, ports: list[int]):
        self._next = itertools.cycle(ports)
        self._http = httpx2.AsyncHTTPTransport()
        self.sent: list[int] = []

    async def handle_async_request(self, request):
        port = next(self._next)
        request.url = request.url.copy_with(port=port)
        request.headers["Host"] = f"{request.url.host}:{port}"
        self.sent.append(port)
        return await self._http.handle_async_request(request)

    async def aclose(self) -> None:
        await self._http.aclose()


def refusal_of(result) -> dict:
    """The service's error body a refused call carries as its text."""
    assert result.is_error, result
    return json.loads(result.content[0].text)["error"]


async def call_ok(session, name: str, arguments: dict | None = None) -> dict:
    result = await session.call_tool(name, arguments or {})
    assert not result.is_error, (name, result.content)
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def exercise_every_tool(session) -> dict[str, dict]:
    """Call each tool once with valid arguments, in an order where each finds what it needs;
    returns each tool's answer."""
    answers = {}
    answers["capture"] = first = await call_ok(
        session,
        "capture",
        {"content": "Postgres is the system of record", "tags": ["db"], "kind": "semantic"},
    )
    second = await call_ok(
        session,
        "capture",
        {"content": "We chose Postgres over MySQL on Monday", "tags": ["db"], "kind": "episodic"},
    )
    a, b = first["id"], second["id"]
    calls = [
        ("link", {"src": b, "dst": a, "type": "relates_to"}),
        ("append", {"id": a, "addition": " since 2024"}),
        ("update", {"id": b, "content": "We chose Postgres over MySQL on Tuesday"}),
        ("setStatus", {"id": b, "status": "draft"}),
        ("recall", {"query": "system of record"}),
        ("listRecent", {}),
        ("getEntry", {"id": a}),
        ("connections", {"id": a}),
        ("graphView", {"seedIds": [a]}),
        ("getTags", {}),
        ("getCount", {}),
        ("getStats", {}),
        ("getBrief", {}),
        ("unlink", {"src": b, "dst": a, "type": "relates_to"}),
        ("forget", {"id": b}),
    ]
    for name, arguments in calls:
        answers[name] = await call_ok(session, name, arguments)
    return answers
