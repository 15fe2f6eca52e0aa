"""The HTTP surface (FastAPI), independent of Ray: it talks to a gateway object.

`build_api` wires the app: the routes of `minisphere.http.routes` (service, admin, tokens,
maintenance, one `POST /v1/w/{workspace}/{method}` per contract method, transfer), the
workspace's MCP endpoint at `/v1/w/{workspace}/mcp` (`minisphere.http.mcp`), the web console at
`/ui`, and the request log; OpenAPI at `/docs`. Every error is JSON
`{"error": {"code", "message"}}` with the status `http_errors` decides.

What the gateway must do is `WorkspaceGateway` (`gateway_protocol.py`): the admin check (which
budgets wrong admin tokens per client address), authorization, contract calls answering
(result, timings), and the admin operations on workspaces, snapshots and tokens. Timings come
back in a `Server-Timing` header (queue, engine, actor, ingress; milliseconds) and
`X-Batch-Size`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from minisphere.contract.pins import PinnedContract
from minisphere.control.auth import WORKSPACE_ID_PATTERN
from minisphere.errors import MalformedRequest
from minisphere.http.admission import InflightLimit
from minisphere.http.callers import RouteError, answer_route_error
from minisphere.http.console import mount_console
from minisphere.http.front_overrides import RefuseFrontOverrides
from minisphere.http.gateway_protocol import WorkspaceGateway
from minisphere.http.handling import error_json
from minisphere.http.mcp.endpoint import MCP_PATH, mount_mcp
from minisphere.http.request_log import RequestLog
from minisphere.http.routes import admin, maintenance, service, tokens, workspace_rpc
from minisphere.http.routes import transfer as transfer_routes
from minisphere.settings import McpSettings

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}
# in the order the published OpenAPI document lists their paths
ROUTES = (service.routes, admin.routes, tokens.routes, maintenance.routes, workspace_rpc.routes)


@contextlib.asynccontextmanager
async def lifespan(api: FastAPI) -> AsyncIterator[None]:
    """The MCP endpoint's session manager runs while the app does."""
    async with api.state.mcp_sessions.run():
        yield


async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    message = "no such route" if exc.status_code == 404 else str(exc.detail)
    return JSONResponse(
        {"error": {"code": code, "message": message}},
        status_code=exc.status_code,
        headers=exc.headers,  # a 405's Allow
    )


async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
    return error_json(MalformedRequest(str(exc.errors()[:3])))


def build_api(
    gateway: WorkspaceGateway,
    contracts: list[PinnedContract],
    *,
    transfer: transfer_routes.TransferOperations | None = None,
    observe: Callable[[dict[str, Any]], None] | None = None,
    request_id: Callable[[], str | None] | None = None,
    max_inflight: int = 0,
    mcp: McpSettings | None = None,
    request_log: bool = True,
) -> FastAPI:
    """The whole HTTP surface. `transfer`: the import/export operations (routes added when
    given); `observe(record)`: called with each request's log record (metrics); `request_id()`:
    the server's own id of the request, when it has one; `max_inflight`: requests held at once,
    past which one is refused with 503 `overloaded` (0: no bound), as is one past its
    workspace's share of them (`admission.workspace_share`); `mcp`: the Host and Origin
    headers the MCP endpoint accepts (default: loopback names); `request_log`: one log line per
    request on the `minisphere.requests` logger."""
    api = FastAPI(
        title="Mini-Sphere",
        version="0.1.0",
        lifespan=lifespan,
        description="Per-workspace memory for AI agents. Workspace routes need "
        "`Authorization: Bearer <workspace token>`; admin routes need the "
        f"admin token. Workspace ids match `{WORKSPACE_ID_PATTERN}`. "
        "Agents that speak the Model Context Protocol reach the same "
        f"methods as MCP tools at `{MCP_PATH}` (Streamable HTTP, "
        "stateless, the workspace token as Bearer), outside this "
        "document: see docs/guides/mcp.md.",
    )
    api.state.gateway, api.state.contracts, api.state.transfer = gateway, contracts, transfer
    # Starlette types every handler as taking any Exception, not the class it is registered for
    api.add_exception_handler(StarletteHTTPException, http_error)  # type: ignore[arg-type]
    api.add_exception_handler(RequestValidationError, validation_error)  # type: ignore[arg-type]
    api.add_exception_handler(RouteError, answer_route_error)  # type: ignore[arg-type]
    for routes in ROUTES:
        routes.add_to(api)
    if transfer is not None:
        transfer_routes.routes.add_to(api)
    api.state.mcp_sessions = mount_mcp(api, gateway, mcp)
    mount_console(api)  # the web console at /ui: static files, public routes only
    # under Ray Serve the proxy sends X-Request-Id itself: echo it only without a server id
    api.add_middleware(
        RequestLog,
        observe=observe,
        request_id=request_id,
        echo_header=request_id is None,
        routes=api.router.routes,
        log_lines=request_log,
    )
    api.add_middleware(InflightLimit, max_inflight=max_inflight)
    # outermost: a request lifting the front's limits is refused before it holds a slot
    api.add_middleware(RefuseFrontOverrides)
    return api
