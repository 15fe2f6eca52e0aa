"""`/v1/w/{workspace}/mcp`: the workspace's MCP server over Streamable HTTP, on the HTTP app.

Stateless (a new transport for each request, no session id), so any ingress replica answers
any request; answers are JSON, not event streams. Only `POST` is routed: the `GET` that opens a
server's own event stream is answered 405 with `Allow: POST` (how the protocol says a server
offers no such stream; clients then go on with `POST` alone), since a stateless server has
nothing to send on it and the stream would hold an ingress slot for as long as it stayed open.

The workspace token comes as `Authorization: Bearer`, checked before the SDK sees the request
the way the RPC routes check it (`gateway.authorize`, which spends the client address's budget
of failed authentications): a missing or refused token is answered with the service's error
body, 401 with `WWW-Authenticate`. Each tool call is authorized again for its own method and
sent through `gateway.call`, as `POST /v1/w/{workspace}/{method}` sends it. The SDK's
DNS-rebinding protection checks Host and Origin against `McpSettings`.

The session manager runs in the app's lifespan (`session_manager.run()`), which Ray Serve and
uvicorn enter before the first request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from minisphere.control.auth import bearer_token, check_workspace_id
from minisphere.engine.methods import METHODS, parse_args
from minisphere.errors import TENANT, Forbidden
from minisphere.http.gateway_protocol import WorkspaceGateway
from minisphere.http.handling import MAX_BODY_BYTES, audience_of, client_address, error_json
from minisphere.http.mcp.server import Context, ToolRefusal, build_server
from minisphere.http.statuses import error_response
from minisphere.settings import McpSettings

MCP_PATH = "/v1/w/{workspace}/mcp"
SCOPE_KEY = "minisphere.mcp.backend"  # the request's backend, in the ASGI scope
# Any token of the workspace may call a read: the request is let in when it could call one.
ENTRY_METHOD = "getCount"
WRITE_METHOD = "capture"  # asked to learn whether the token may write
AUTH_CHALLENGE = 'Bearer realm="minisphere"'
MCP_METHODS = ("POST",)  # stateless: no session to end (DELETE), no stream to open (GET)


@dataclass(frozen=True)
class GatewayBackend:
    """The caller's workspace through the gateway: what the RPC routes do per call."""

    gateway: WorkspaceGateway
    workspace: str
    token: str
    client: str
    audience: str = TENANT

    async def can_write(self) -> bool:
        try:
            await self.gateway.authorize(self.workspace, self.token, WRITE_METHOD, self.client)
        except Forbidden:  # insufficient_scope: a read token
            return False
        return True

    async def call(self, method: str, args: dict[str, Any], idempotency_key: str | None) -> Any:
        try:
            caller = await self.gateway.authorize(self.workspace, self.token, method, self.client)
            parsed = parse_args(METHODS[method], args)
            result, _ = await self.gateway.call(
                self.workspace, method, parsed, caller, idempotency_key
            )
        except Exception as exc:  # noqa: BLE001 - every refusal is the model's to read
            _, body = error_response(exc, self.audience)
            raise ToolRefusal(body["error"]["code"], body["error"]["message"]) from None
        return result


class McpEndpoint:
    """The ASGI endpoint: the bearer token checked, then the SDK's transport."""

    def __init__(self, gateway: WorkspaceGateway, transport: ASGIApp) -> None:
        self.gateway, self.transport = gateway, transport

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        audience = TENANT
        try:
            workspace = check_workspace_id(scope["path_params"]["workspace"])
            token = bearer_token(request.headers.get("authorization"))
            audience = audience_of(self.gateway, token)
            client = client_address(request)
            await self.gateway.authorize(workspace, token, ENTRY_METHOD, client)
        except Exception as exc:  # noqa: BLE001 - answered as a structured error
            refusal = error_json(exc, audience)
            if refusal.status_code == 401:
                refusal.headers["WWW-Authenticate"] = AUTH_CHALLENGE
            await refusal(scope, receive, send)
            return
        scope[SCOPE_KEY] = GatewayBackend(self.gateway, workspace, token, client, audience)
        await self.transport(scope, receive, send)


def backend_of(ctx: Context) -> GatewayBackend:
    """The backend `McpEndpoint` put in the request's scope (over HTTP a request is always
    there; the SDK types it optional for stdio)."""
    if ctx.request is None:
        raise RuntimeError("an MCP request over HTTP carries its HTTP request")
    backend: GatewayBackend = ctx.request.scope[SCOPE_KEY]
    return backend


def mount_mcp(
    api: FastAPI, gateway: WorkspaceGateway, settings: McpSettings | None = None
) -> StreamableHTTPSessionManager:
    """Add the endpoint to `api`; returns the session manager, whose `run()` the app's
    lifespan must enter."""
    settings = settings or McpSettings()
    manager = StreamableHTTPSessionManager(
        app=build_server(backend_of),
        stateless=True,
        json_response=True,
        max_request_body_size=MAX_BODY_BYTES,
        security_settings=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=list(settings.allowed_hosts),
            allowed_origins=list(settings.allowed_origins),
        ),
    )
    api.router.routes.append(
        Route(
            MCP_PATH,
            McpEndpoint(gateway, StreamableHTTPASGIApp(manager)),
            methods=list(MCP_METHODS),  # others: 405 with Allow, before the token check
            name="mcp",
            include_in_schema=False,
        )
    )
    return manager
