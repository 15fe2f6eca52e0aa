"""Token routes: `GET /v1/whoami` (any bearer token), and the admin's
`POST/GET /v1/workspaces/{id}/tokens` and `DELETE /v1/workspaces/{id}/tokens/{token_id}`."""

from __future__ import annotations

from typing import Annotated, Optional, TypeAlias

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from minisphere.control.auth import TokenScope, check_workspace_id
from minisphere.engine.arguments import INTEGRAL
from minisphere.errors import NotFound
from minisphere.http import links
from minisphere.http import service_responses as S
from minisphere.http.callers import AdminGateway, BearerToken, Gateway, WorkspaceId
from minisphere.http.gateway_protocol import TokenInfos
from minisphere.http.handling import client_address, read_spec
from minisphere.http.route_docs import answers, json_body
from minisphere.http.routes import Routes
from minisphere.wire.records import Identity, TokenIssued, TokenRevoked

TOKEN_MAX_LIFETIME_S = 10 * 365 * 24 * 3600  # ten years: "does not expire" is null
TOKEN_ID_MAX_CHARS = 64
# an integer, and 60.0 is 60 as in JSON Schema (the engine's arguments take it so too)
ExpiresInS: TypeAlias = Annotated[StrictInt, Field(ge=1, le=TOKEN_MAX_LIFETIME_S), INTEGRAL]

routes = Routes()


class CreateToken(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scope: TokenScope = Field(
        description="read: the read methods only; write: every read and write method"
    )
    label: Optional[Annotated[StrictStr, Field(max_length=200)]] = None
    expiresInS: Optional[ExpiresInS] = None


@routes.get(
    "/v1/whoami",
    tags=["service"],
    responses=answers(S.WhoAmI),
    summary="What the bearer token is: admin, or a workspace token and its scope",
)
async def whoami(request: Request, token: BearerToken, gateway: Gateway) -> Identity:
    return await gateway.whoami(token, client_address(request))


@routes.post(
    "/v1/workspaces/{workspace_id}/tokens",
    tags=["admin"],
    status_code=201,
    summary="Issue a workspace token (the secret is shown only in this answer)",
    responses=answers(TokenIssued, 201, links.TOKEN_ISSUED),
    openapi_extra=json_body(CreateToken, required=True),
)
async def create_token(
    workspace_id: WorkspaceId, request: Request, gateway: AdminGateway
) -> JSONResponse:
    check_workspace_id(workspace_id)
    spec = await read_spec(request, CreateToken, "token", required=True)
    issued = await gateway.create_token(workspace_id, spec.scope, spec.label, spec.expiresInS)
    return JSONResponse(issued, status_code=201)


@routes.get(
    "/v1/workspaces/{workspace_id}/tokens",
    tags=["admin"],
    summary="The workspace's tokens (never a secret or a hash)",
    responses=answers(S.TokenList),
)
async def list_tokens(workspace_id: WorkspaceId, gateway: AdminGateway) -> dict[str, TokenInfos]:
    return {"items": await gateway.list_tokens(check_workspace_id(workspace_id))}


@routes.delete(
    "/v1/workspaces/{workspace_id}/tokens/{token_id}",
    tags=["admin"],
    summary="Revoke a token: refused from the very next request on",
    responses=answers(TokenRevoked, links=links.TOKEN_REVOKED),
)
async def revoke_token(
    workspace_id: WorkspaceId, token_id: str, gateway: AdminGateway
) -> TokenRevoked:
    check_workspace_id(workspace_id)
    if not token_id.isascii() or len(token_id) > TOKEN_ID_MAX_CHARS:
        raise NotFound(f"workspace {workspace_id} has no token {token_id[:64]!r}")
    return await gateway.revoke_token(workspace_id, token_id)
