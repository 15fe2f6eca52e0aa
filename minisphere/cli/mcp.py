"""`minisphere mcp`: one workspace's MCP server on stdio, for a local MCP client (Claude
Desktop, Claude Code, Cursor, ...) that starts it as a subprocess.

    MINISPHERE_URL=http://127.0.0.1:8000 MINISPHERE_TOKEN=msw_... minisphere mcp --workspace notes

The server is the one the service's `/v1/w/{workspace}/mcp` endpoint serves
(`minisphere.http.mcp.server`): the same tools, resources and prompt; its calls go to the
service through the HTTP client. The token is checked once at start (`/v1/whoami`): a
read-scoped token is shown the reads only. Nothing but the protocol is written to stdout;
refusals at start go to stderr with exit status 1.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

from minisphere.cli.common import NO_TOKEN, Subparsers, admin_token, connection_flags, fail
from minisphere.client import AsyncClient, AsyncWorkspaceClient, Client, ServiceError
from minisphere.http.mcp.server import ToolRefusal, build_server


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="serve a workspace over the Model Context Protocol on stdio",
        description="One workspace's MCP server (tools, resources, prompt) on stdin/stdout, "
        "calling the service at --url with the workspace token.",
    )
    connection_flags(parser, workspace=True)
    parser.set_defaults(func=cmd_mcp)


@dataclass
class ClientBackend:
    """The workspace through the HTTP client."""

    handle: AsyncWorkspaceClient
    workspace: str
    writes: bool

    async def can_write(self) -> bool:
        return self.writes

    async def call(self, method: str, args: dict[str, Any], idempotency_key: str | None) -> Any:
        try:
            return await self.handle.call_tool(method, args, idempotency_key=idempotency_key)
        except ServiceError as exc:
            raise ToolRefusal(exc.code, exc.message) from None


def token_may_write(url: str, workspace: str, token: str) -> bool:
    """Whether the token may call the writes of `workspace`; ServiceError when the service
    refuses it, ValueError when it belongs to another workspace."""
    with Client(url) as client:
        grant = client.whoami(token)
    if grant.get("kind") == "admin":
        return True
    if grant.get("workspace") != workspace:
        raise ValueError(
            f"the token belongs to workspace {grant.get('workspace')}, not {workspace}"
        )
    writes: bool = grant.get("scope") == "write"
    return writes


async def serve_stdio(url: str, workspace: str, token: str, writes: bool) -> None:
    from mcp.server.stdio import stdio_server

    async with AsyncClient(url) as client:
        backend = ClientBackend(client.workspace(workspace, token), workspace, writes)
        server = build_server(lambda _ctx: backend)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


def cmd_mcp(args: argparse.Namespace) -> int:
    if not args.workspace:
        return fail("give --workspace (or set MINISPHERE_WORKSPACE)")
    token = args.token or admin_token(args)
    if not token:
        return fail(NO_TOKEN)
    try:
        writes = token_may_write(args.url, args.workspace, token)
    except ServiceError as exc:
        return fail(f"{args.url} refused the token: {exc.code}: {exc.message}")
    except ValueError as exc:
        return fail(str(exc))
    except httpx.HTTPError as exc:
        return fail(f"cannot reach {args.url}: {exc}")
    anyio.run(serve_stdio, args.url, args.workspace, token, writes)
    return 0
