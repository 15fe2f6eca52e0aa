"""`minisphere mcp --workspace W` as an MCP client starts it: a subprocess spoken to over stdio
by the SDK's own stdio client, calling the real app over real engine files (the `service`
fixture) with the token from MINISPHERE_TOKEN. The same tools as the HTTP endpoint; a read
token sees the reads; a bad token stops the command at start, on stderr."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from minisphere.contract.tools import TOOL_ARGUMENTS
from minisphere.engine.methods import METHODS
from tests.support.mcp_session import call_ok, exercise_every_tool, refusal_of

CHECKOUT = str(Path(__file__).resolve().parents[2])


def stdio_server(url: str, workspace: str, token: str) -> StdioServerParameters:
    # this checkout first, so the subprocess runs the code under test
    path = os.pathsep.join([CHECKOUT, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "minisphere.cli", "mcp", "--workspace", workspace],
        env={"MINISPHERE_URL": url, "MINISPHERE_TOKEN": token, "PYTHONPATH": path},
    )


async def over_stdio(parameters: StdioServerParameters, use):
    async with (
        stdio_client(parameters) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        return await use(session)


def test_every_tool_over_stdio_with_a_write_token(service):
    created = service.gateway.create_now()

    async def use(session):
        listed = [tool.name for tool in (await session.list_tools()).tools]
        return listed, await exercise_every_tool(session), await call_ok(session, "getCount")

    listed, answers, count = asyncio.run(
        over_stdio(stdio_server(service.url, created["workspace"]["id"], created["token"]), use)
    )
    assert listed == list(TOOL_ARGUMENTS) and set(answers) == set(TOOL_ARGUMENTS)
    assert count == {"count": 1}


def test_a_read_token_over_stdio_sees_the_reads_and_is_refused_a_write(service):
    workspace = service.gateway.create_now()["workspace"]["id"]
    read = service.gateway.control.tokens.issue(workspace, "read", None, None)["token"]

    async def use(session):
        listed = [tool.name for tool in (await session.list_tools()).tools]
        return listed, await session.call_tool("capture", {"content": "no"})

    listed, refused = asyncio.run(over_stdio(stdio_server(service.url, workspace, read), use))
    assert listed == [name for name in TOOL_ARGUMENTS if METHODS[name].access == "read"]
    assert refusal_of(refused)["code"] == "insufficient_scope"


def test_a_wrong_token_stops_the_command_before_it_serves(service, cli, monkeypatch):
    workspace = service.gateway.create_now()["workspace"]["id"]
    monkeypatch.setenv("MINISPHERE_TOKEN", "msw_not-a-token")
    ran = cli("mcp", "--workspace", workspace)
    assert ran.code == 1 and "unauthenticated" in ran.err and ran.out == ""
