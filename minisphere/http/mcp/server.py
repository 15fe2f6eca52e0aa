"""The MCP server of one workspace (the SDK's low-level `Server`), over a `WorkspaceBackend`:
the HTTP endpoint's backend is the gateway (`endpoint.py`), the stdio server's the HTTP client
(`minisphere.cli.mcp`). Every request asks `backend_of(ctx)` for the backend of its caller.

- tools: the contract's tools a workspace token may call (`tools.py`); a read-scoped token is
  shown only the reads. A refused call is a tool result with `isError` and the service's error
  body (`{"error": {"code", "message"}}`), never a protocol error; only a name that is no tool
  is one (invalid params), as the protocol has it;
- resources: the brief (`minisphere://{workspace}/brief`) and each entry
  (`minisphere://{workspace}/entries/{id}`: the entry with its tags, revisions and staleness,
  and its connections);
- prompts: `use_workspace` (`guide.py`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS

from minisphere.contract.tools import TOOL_ARGUMENTS
from minisphere.errors import TENANT, MiniSphereError
from minisphere.http.mcp import guide
from minisphere.http.mcp import tools as T
from minisphere.wire.answers import BriefAnswer, ConnectionsAnswer, EntryDetail

SERVER_NAME = "minisphere"
SERVER_VERSION = "0.1.0"
RESOURCE_NOT_FOUND = -32002  # the protocol's code for a resource that cannot be read
JSON_MIME = "application/json"
URI_SCHEME = "minisphere"
_ENTRY_URI = re.compile(r"^minisphere://(?P<workspace>[^/]+)/entries/(?P<id>[^/]+)$")
_BRIEF_URI = re.compile(r"^minisphere://(?P<workspace>[^/]+)/brief$")


# what the SDK hands each handler: the request's context (no lifespan state here), and a
# listing's paging, which the lists ignore (each fits on one page)
Context = ServerRequestContext[Any]
Paging = types.PaginatedRequestParams | None


class ToolRefusal(Exception):
    """The service refused a call: its error code and the message the caller may read."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message = code, message


class WorkspaceBackend(Protocol):
    @property
    def workspace(self) -> str:
        """The one workspace this backend calls (read-only: a backend is made per caller)."""

    async def can_write(self) -> bool:
        """Whether the caller's token may call the writes."""

    async def call(self, method: str, args: dict[str, Any], idempotency_key: str | None) -> Any:
        """The service's answer to one call, or ToolRefusal."""


def entry_uri(workspace: str, entry_id: str) -> str:
    return f"{URI_SCHEME}://{workspace}/entries/{entry_id}"


def brief_uri(workspace: str) -> str:
    return f"{URI_SCHEME}://{workspace}/brief"


def build_server(backend_of: Callable[[Context], WorkspaceBackend]) -> Server:
    """The server; `backend_of(ctx)`: the backend of the request's caller."""
    server = Server(
        SERVER_NAME,
        version=SERVER_VERSION,
        instructions=guide.INSTRUCTIONS,
        **_tool_handlers(backend_of),
        **_resource_handlers(backend_of),
        **_prompt_handlers(backend_of),
    )
    # the SDK's tracing middleware is a no-op without an exporter; the request log is ours
    server.middleware.clear()
    return server


def _tool_handlers(backend_of: Callable[[Context], WorkspaceBackend]) -> dict[str, Any]:
    """Listing the tools the caller may use, and calling one."""

    async def list_tools(ctx: Context, _params: Paging) -> types.ListToolsResult:
        return types.ListToolsResult(tools=T.tools_for(await backend_of(ctx).can_write()))

    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in TOOL_ARGUMENTS:
            raise MCPError(
                INVALID_PARAMS,
                f"no tool {params.name!r}; the tools are {', '.join(TOOL_ARGUMENTS)}",
            )
        try:
            args, key = T.split_arguments(params.name, params.arguments)
            result = await backend_of(ctx).call(params.name, args, key)
        except MiniSphereError as exc:
            return T.refusal(exc.code, exc.message_for(TENANT))
        except ToolRefusal as refused:
            return T.refusal(refused.code, refused.message)
        return T.answer(result)

    return {"on_list_tools": list_tools, "on_call_tool": call_tool}


def _resource_handlers(backend_of: Callable[[Context], WorkspaceBackend]) -> dict[str, Any]:
    """The workspace's brief and its entries, as resources."""

    async def list_resources(ctx: Context, _params: Paging) -> types.ListResourcesResult:
        workspace = backend_of(ctx).workspace
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    name="brief",
                    title="Workspace brief",
                    uri=brief_uri(workspace),
                    mime_type=JSON_MIME,
                    description="Recent activity, top topics and entries worth resurfacing",
                )
            ]
        )

    async def list_resource_templates(
        ctx: Context, _params: Paging
    ) -> types.ListResourceTemplatesResult:
        workspace = backend_of(ctx).workspace
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    name="entry",
                    title="An entry",
                    uri_template=entry_uri(workspace, "{id}"),
                    mime_type=JSON_MIME,
                    description="One entry: content, tags, revisions, staleness, "
                    "and its connections (edges with their entries)",
                )
            ]
        )

    async def read_resource(
        ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        backend, uri = backend_of(ctx), str(params.uri)
        content = await _read(backend, uri)
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=uri, mime_type=JSON_MIME, text=json.dumps(content))
            ]
        )

    return {
        "on_list_resources": list_resources,
        "on_list_resource_templates": list_resource_templates,
        "on_read_resource": read_resource,
    }


def _prompt_handlers(backend_of: Callable[[Context], WorkspaceBackend]) -> dict[str, Any]:
    """The one prompt: how to use this workspace as memory."""

    async def list_prompts(_ctx: Context, _params: Paging) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=guide.PROMPT_NAME,
                    title="Use this workspace as memory",
                    description=guide.PROMPT_DESCRIPTION,
                )
            ]
        )

    async def get_prompt(
        ctx: Context, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != guide.PROMPT_NAME:
            raise MCPError(
                INVALID_PARAMS, f"no prompt {params.name!r}; the prompt is {guide.PROMPT_NAME}"
            )
        text = guide.prompt_text(backend_of(ctx).workspace)
        return types.GetPromptResult(
            description=guide.PROMPT_DESCRIPTION,
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
            ],
        )

    return {"on_list_prompts": list_prompts, "on_get_prompt": get_prompt}


async def _read(backend: WorkspaceBackend, uri: str) -> Mapping[str, Any]:
    """A resource's JSON; the protocol's resource-not-found error for a URI that names no
    resource of this workspace, or one the service refuses to read."""
    entry, brief = _ENTRY_URI.match(uri), _BRIEF_URI.match(uri)
    found = entry or brief
    if found is None or found["workspace"] != backend.workspace:
        raise MCPError(RESOURCE_NOT_FOUND, f"no resource {uri!r} in workspace {backend.workspace}")
    try:
        if entry is None:  # then the brief matched
            workspace_brief: BriefAnswer = await backend.call("getBrief", {}, None)
            return workspace_brief
        detail: EntryDetail = await backend.call("getEntry", {"id": entry["id"]}, None)
        linked: ConnectionsAnswer = await backend.call("connections", {"id": entry["id"]}, None)
    except MiniSphereError as exc:
        raise MCPError(RESOURCE_NOT_FOUND, f"{exc.code}: {exc.message_for(TENANT)}") from None
    except ToolRefusal as refused:
        raise MCPError(RESOURCE_NOT_FOUND, f"{refused.code}: {refused.message}") from None
    return {**detail, "connections": linked["items"]}
