"""Who is calling, as FastAPI dependencies. Each checks the bearer token the way its routes
need and answers every failure of the route, its own check's and the route's, as the error
body for the caller's audience: only the admin reads the details an error withholds.

    gateway: Gateway            the app's gateway, no check (the public routes)
    gateway: AdminGateway       the gateway, once the bearer token is the admin token
    token: BearerToken          any bearer token, unchecked: the route asks the gateway about it
    call: WorkspaceCall = workspace_caller(m)
                                a token the gateway authorized for method `m` on the workspace

A failure raises `RouteError` (the error and its audience), which the app answers with
`error_json`. The checking dependencies run around the route function only (scope
"function"), so a failure while a streamed body is being sent is not theirs to answer.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Path, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from minisphere.control.auth import bearer_token, check_workspace_id
from minisphere.errors import ADMIN, TENANT
from minisphere.http.gateway_protocol import WorkspaceGateway
from minisphere.http.handling import audience_of, client_address, error_json

# What `check_workspace_id` accepts (WORKSPACE_ID_PATTERN, and no final '-') as one pattern,
# for the published document.
WORKSPACE_ID_SHAPE = r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$"
# A workspace id in a route's path. The pattern is published (so clients and fuzzers send ids
# the routes accept), not enforced by FastAPI: `check_workspace_id` refuses any other id with
# its own named error and message, before anything is woken.
WorkspaceId = Annotated[
    str,
    Path(
        json_schema_extra={
            "pattern": WORKSPACE_ID_SHAPE,
            "description": "a workspace id: lower-case letters, digits and '-', 3 to 63 characters",
        }
    ),
]


class RouteError(Exception):
    """A route's failure and the audience its error answer is written for."""

    def __init__(self, error: BaseException, audience: str):
        super().__init__(error)
        self.error, self.audience = error, audience


async def answer_route_error(_request: Request, exc: RouteError) -> JSONResponse:
    return error_json(exc.error, exc.audience)


def _route_error(exc: Exception, audience: str) -> Exception:
    # FastAPI's own request errors are raised inside the dependencies' scope too: they keep
    # the app's handlers for them
    if isinstance(exc, RequestValidationError | StarletteHTTPException):
        return exc
    return RouteError(exc, audience)


def _bearer(request: Request) -> str:
    return bearer_token(request.headers.get("authorization"))


async def _gateway(request: Request) -> WorkspaceGateway:
    gateway: WorkspaceGateway = request.app.state.gateway
    return gateway


async def _admin_gateway(request: Request) -> AsyncIterator[WorkspaceGateway]:
    gateway, audience = request.app.state.gateway, TENANT  # a refused caller is told least
    try:
        await gateway.require_admin(_bearer(request), client_address(request))
        audience = ADMIN
        yield gateway
    except Exception as exc:  # noqa: BLE001 - answered as a structured error
        raise _route_error(exc, audience) from None


async def _bearer_token(request: Request) -> AsyncIterator[str]:
    try:
        yield _bearer(request)
    except Exception as exc:  # noqa: BLE001 - answered as a structured error
        raise _route_error(exc, TENANT) from None


Gateway = Annotated[WorkspaceGateway, Depends(_gateway)]
AdminGateway = Annotated[WorkspaceGateway, Depends(_admin_gateway, scope="function")]
BearerToken = Annotated[str, Depends(_bearer_token, scope="function")]


@dataclass(frozen=True)
class WorkspaceCall:
    """A call the gateway authorized: `caller` is what `gateway.authorize` answered (sent on
    with the call); `started` the request's arrival at the route and `auth_ms` the
    authorization's own time, for its Server-Timing."""

    gateway: WorkspaceGateway
    workspace: str
    caller: Any
    started: float
    auth_ms: float = 0.0


def workspace_caller(method: str, param: str = "workspace") -> Any:
    """The dependency of a route that calls `method` on the workspace named by the path
    parameter `param`: the bearer token must be authorized for it (the admin token always is);
    failures are answered to the token's audience. Typed `Any` as FastAPI's `Depends` is, so it
    can stand as the default of a `WorkspaceCall` parameter."""

    async def authorized(request: Request) -> AsyncIterator[WorkspaceCall]:
        started = time.perf_counter()
        gateway, audience = request.app.state.gateway, TENANT
        try:
            workspace = check_workspace_id(request.path_params[param])
            token = _bearer(request)
            audience = audience_of(gateway, token)
            asked = time.perf_counter()
            caller = await gateway.authorize(workspace, token, method, client_address(request))
            yield WorkspaceCall(
                gateway, workspace, caller, started, (time.perf_counter() - asked) * 1e3
            )
        except Exception as exc:  # noqa: BLE001 - answered as a structured error
            raise _route_error(exc, audience) from None

    return Depends(authorized, scope="function")
