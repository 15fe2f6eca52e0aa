"""The HTTP surface (FastAPI), independent of Ray: it talks to a gateway object.

Routes: `POST /v1/w/{workspace}/{method}` (one per contract method, documented with its
argument schema), admin `POST/GET /v1/workspaces`, `GET/DELETE /v1/workspaces/{id}`,
durability: `POST /v1/workspaces/{id}/snapshot` (admin), `GET /v1/workspaces/{id}/snapshots`
(admin or the workspace's token), `POST /v1/workspaces/{id}/restore` {version} (admin),
`POST /v1/workspaces/{id}/snapshots/prune` {keep} (admin),
`GET /healthz`, `GET /v1/contracts`; OpenAPI at `/docs`. Every error is JSON
`{"error": {"code", "message"}}` with the status `http_errors` decides.

The gateway needs: is_admin/require_admin(token), authorize(ws, token, method),
call(ws, method, body) -> (result, timings), create/list/get/delete. Timings come back in a
`Server-Timing` header (queue, engine, actor, ingress; milliseconds) and `X-Batch-Size`.
"""
from __future__ import annotations

import time
from typing import Annotated, Any, Literal, Optional

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from minisphere.control.auth import WORKSPACE_ID_PATTERN, bearer_token, check_workspace_id
from minisphere.control.blueprints import parse_blueprint
from minisphere.durability.snapshots import VERSION_PATTERN as SNAPSHOT_VERSION_PATTERN
from minisphere.engine.idempotency import IDEMPOTENCY_KEEP_MS, KEY_PATTERN
from minisphere.engine.methods import METHODS, describe_validation_error, parse_args
from minisphere.errors import TENANT, MalformedRequest, NotFound
from minisphere.http import responses as R
from minisphere.http.console import mount_console
from minisphere.http.handling import (
    IDEMPOTENCY_HEADER,
    REPLAY_HEADER,
    as_admin,
    audience_of,
    client_address,
    error_json,
    idempotency_key,
    query_integer,
    read_json_object,
    server_timing,
)
from minisphere.http.request_log import RequestLog
from minisphere.http.transfer_routes import add_transfer_routes
from minisphere.maintenance.runs import RUNS_DEFAULT_LIMIT, RUNS_MAX_LIMIT

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}
WORKSPACES_MAX_LIMIT = 1000
PRUNE_KEEP_MAX = 1000
TOKEN_MAX_LIFETIME_S = 10 * 365 * 24 * 3600       # ten years: "does not expire" is null
TOKEN_ID_MAX_CHARS = 64
AFTER_MAX_CHARS = 100


IDEMPOTENCY_KEY_DOC = {
    "name": IDEMPOTENCY_HEADER, "in": "header", "required": False,
    "schema": {"type": "string", "minLength": 1, "maxLength": 200,
               "pattern": KEY_PATTERN.pattern},
    "description": "Makes the write safe to send again: a repeat with the same key within "
                   f"{IDEMPOTENCY_KEEP_MS // 3_600_000} hours is answered what the first was "
                   "answered and writes nothing; the same key with another method or body is "
                   "refused with 409 idempotency_key_reused."}
IDEMPOTENT_REPLAY_DOC = {REPLAY_HEADER: {
    "description": "true when the answer is the stored one of an earlier call with the same "
                   "Idempotency-Key (nothing was written this time)",
    "schema": {"type": "string", "enum": ["true"]}}}


def answers(model, status: int = 200) -> dict:
    """OpenAPI `responses` for a route answering `model` (documentation only: the routes
    return the engine's JSON as is)."""
    return {status: {"model": model}, **R.ERROR_RESPONSES}


def json_body(model: type[BaseModel], required: bool | None = None) -> dict:
    """OpenAPI `openapi_extra` documenting a JSON body of `model` (the routes read it with
    `read_spec`, not through FastAPI's own body parsing)."""
    body: dict = {"content": {"application/json": {"schema": model.model_json_schema()}}}
    if required is not None:
        body = {"required": required, **body}
    return {"requestBody": body}


class RestoreWorkspace(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: Annotated[StrictStr, Field(pattern=SNAPSHOT_VERSION_PATTERN.pattern,
                                        description="a version from GET .../snapshots")]


class PruneSnapshots(BaseModel):
    model_config = ConfigDict(extra="forbid")
    keep: Annotated[StrictInt, Field(ge=1, le=PRUNE_KEEP_MAX,
                                     description="versions to keep, the newest first")] = 1


class CreateToken(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scope: Literal["read", "write"] = Field(description="read: the read methods only; write: "
                                                        "every read and write method")
    label: Optional[Annotated[StrictStr, Field(max_length=200)]] = None
    expiresInS: Optional[Annotated[StrictInt, Field(ge=1, le=TOKEN_MAX_LIFETIME_S)]] = None


class CreateWorkspace(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: Optional[Annotated[StrictStr, Field(pattern=WORKSPACE_ID_PATTERN)]] = None
    blueprint: Optional[dict[str, Any]] = None
    label: Optional[Annotated[StrictStr, Field(max_length=200)]] = None


async def read_spec(request: Request, model: type[BaseModel], what: str,
                    required: bool = False):
    """The request's JSON object body as `model`; a 400 naming `what` when it does not fit."""
    body = await read_json_object(request, required=required)
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise MalformedRequest(describe_validation_error(what, exc)) from None


def build_api(gateway, contracts: list[dict], *, transfer=None, observe=None,
              request_id=None) -> FastAPI:
    """The whole HTTP surface. `transfer`: the import/export operations (routes added when
    given); `observe(record)`: called with each request's log record (metrics); `request_id()`:
    the server's own id of the request, when it has one."""
    api = FastAPI(title="Mini-Sphere", version="0.1.0",
                  description="Per-workspace memory for AI agents. Workspace routes need "
                              "`Authorization: Bearer <workspace token>`; admin routes need the "
                              f"admin token. Workspace ids match `{WORKSPACE_ID_PATTERN}`.")

    @api.exception_handler(StarletteHTTPException)
    async def http_error(_request, exc: StarletteHTTPException):
        code = _HTTP_CODES.get(exc.status_code, "http_error")
        message = "no such route" if exc.status_code == 404 else str(exc.detail)
        return JSONResponse({"error": {"code": code, "message": message}},
                            status_code=exc.status_code)

    @api.exception_handler(RequestValidationError)
    async def validation_error(_request, exc: RequestValidationError):
        return error_json(MalformedRequest(str(exc.errors()[:3])))

    @api.get("/healthz", tags=["service"], responses=answers(R.Health))
    async def healthz():
        return {"status": "ok"}

    @api.get("/v1/contracts", tags=["service"], responses=answers(R.ContractsAnswer))
    async def list_contracts():
        return {"contracts": contracts,
                "methods": [{"name": m.name, "access": m.access, "positional": list(m.positional)}
                            for m in METHODS.values()]}

    # ---- admin -----------------------------------------------------------------------------
    @api.post("/v1/workspaces", tags=["admin"], status_code=201,
              responses=answers(R.CreatedWorkspace, 201),
              openapi_extra=json_body(CreateWorkspace))
    async def create_workspace(request: Request):
        async def create():
            spec = await read_spec(request, CreateWorkspace, "createWorkspace")
            if spec.blueprint is not None:
                parse_blueprint(spec.blueprint)   # refused here (422), before the directory
            created = await gateway.create(spec.id, spec.blueprint, spec.label)
            return JSONResponse(created, status_code=201)
        return await as_admin(gateway, request, create)

    @api.get("/v1/workspaces", tags=["admin"], responses=answers(R.WorkspaceList))
    async def list_workspaces(request: Request, limit: str = str(WORKSPACES_MAX_LIMIT),
                              after: str = ""):
        async def listing():
            count = query_integer(limit, "limit", 1, WORKSPACES_MAX_LIMIT)
            return {"items": await gateway.list(count, after[:AFTER_MAX_CHARS])}
        return await as_admin(gateway, request, listing)

    @api.get("/v1/workspaces/{workspace_id}", tags=["admin"],
             responses=answers(R.WorkspaceDetail))
    async def get_workspace(workspace_id: str, request: Request):
        return await as_admin(gateway, request,
                              lambda: gateway.get(check_workspace_id(workspace_id)))

    @api.delete("/v1/workspaces/{workspace_id}", tags=["admin"], responses=answers(R.Deleted))
    async def delete_workspace(workspace_id: str, request: Request):
        return await as_admin(gateway, request,
                              lambda: gateway.delete(check_workspace_id(workspace_id)))

    # ---- durability ----------------------------------------------------------------
    @api.post("/v1/workspaces/{workspace_id}/snapshot", tags=["admin"],
              summary="Take a snapshot now (returns its manifest)",
              responses=answers(R.SnapshotManifest))
    async def snapshot_workspace(workspace_id: str, request: Request):
        return await as_admin(gateway, request,
                              lambda: gateway.snapshot(check_workspace_id(workspace_id)))

    @api.get("/v1/workspaces/{workspace_id}/snapshots", tags=["admin"],
             summary="List snapshot versions, oldest first (admin or the workspace's token)",
             responses=answers(R.SnapshotList))
    async def list_workspace_snapshots(workspace_id: str, request: Request):
        audience = TENANT
        try:
            check_workspace_id(workspace_id)
            token = bearer_token(request.headers.get("authorization"))
            audience = audience_of(gateway, token)
            await gateway.authorize(workspace_id, token, "listSnapshots",
                                    client_address(request))
            return {"items": await gateway.list_snapshots(workspace_id)}
        except Exception as exc:  # noqa: BLE001
            return error_json(exc, audience)

    @api.post("/v1/workspaces/{workspace_id}/hibernate", tags=["admin"],
              summary="Hibernate now: snapshot if changed, close, release its actor",
              responses=answers(R.Hibernated))
    async def hibernate_workspace(workspace_id: str, request: Request):
        return await as_admin(gateway, request,
                              lambda: gateway.hibernate(check_workspace_id(workspace_id)))

    @api.post("/v1/workspaces/{workspace_id}/restore", tags=["admin"],
              summary="Restore a snapshot version (point-in-time restore)",
              responses=answers(R.Restored),
              openapi_extra=json_body(RestoreWorkspace, required=True))
    async def restore_workspace(workspace_id: str, request: Request):
        async def restore():
            check_workspace_id(workspace_id)
            spec = await read_spec(request, RestoreWorkspace, "restore", required=True)
            return await gateway.restore(workspace_id, spec.version)
        return await as_admin(gateway, request, restore)

    @api.post("/v1/workspaces/{workspace_id}/snapshots/prune", tags=["admin"],
              summary="Keep only the newest versions (after a forget: drop the versions that "
                      "still hold the forgotten text)",
              responses=answers(R.Pruned),
              openapi_extra=json_body(PruneSnapshots, required=False))
    async def prune_workspace_snapshots(workspace_id: str, request: Request):
        async def prune():
            check_workspace_id(workspace_id)
            spec = await read_spec(request, PruneSnapshots, "prune")
            return await gateway.prune_snapshots(workspace_id, spec.keep)
        return await as_admin(gateway, request, prune)

    # ---- tokens --------------------------------------------------------------------
    @api.get("/v1/whoami", tags=["service"], responses=answers(R.WhoAmI),
             summary="What the bearer token is: admin, or a workspace token and its scope")
    async def whoami(request: Request):
        try:
            token = bearer_token(request.headers.get("authorization"))
            return await gateway.whoami(token, client_address(request))
        except Exception as exc:  # noqa: BLE001
            return error_json(exc, TENANT)

    @api.post("/v1/workspaces/{workspace_id}/tokens", tags=["admin"], status_code=201,
              summary="Issue a workspace token (the secret is shown only in this answer)",
              responses=answers(R.TokenIssued, 201),
              openapi_extra=json_body(CreateToken, required=True))
    async def create_token(workspace_id: str, request: Request):
        async def create():
            check_workspace_id(workspace_id)
            spec = await read_spec(request, CreateToken, "token", required=True)
            issued = await gateway.create_token(workspace_id, spec.scope, spec.label,
                                                spec.expiresInS)
            return JSONResponse(issued, status_code=201)
        return await as_admin(gateway, request, create)

    @api.get("/v1/workspaces/{workspace_id}/tokens", tags=["admin"],
             summary="The workspace's tokens (never a secret or a hash)",
             responses=answers(R.TokenList))
    async def list_tokens(workspace_id: str, request: Request):
        async def listing():
            return {"items": await gateway.list_tokens(check_workspace_id(workspace_id))}
        return await as_admin(gateway, request, listing)

    @api.delete("/v1/workspaces/{workspace_id}/tokens/{token_id}", tags=["admin"],
                summary="Revoke a token: refused from the very next request on",
                responses=answers(R.TokenRevoked))
    async def revoke_token(workspace_id: str, token_id: str, request: Request):
        async def revoke():
            check_workspace_id(workspace_id)
            if not token_id.isascii() or len(token_id) > TOKEN_ID_MAX_CHARS:
                raise NotFound(f"workspace {workspace_id} has no token {token_id[:64]!r}")
            return await gateway.revoke_token(workspace_id, token_id)
        return await as_admin(gateway, request, revoke)

    # ---- maintenance ---------------------------------------------------------------
    @api.get("/v1/maintenance/runs", tags=["maintenance (admin token)"],
             responses=answers(R.MaintenanceRuns))
    async def maintenance_runs(request: Request, workspace: Optional[str] = None,
                               limit: str = str(RUNS_DEFAULT_LIMIT)):
        """Staleness runs (cron and manual), newest first; `?workspace=` filters."""
        async def runs():
            if workspace is not None:
                check_workspace_id(workspace)
            count = query_integer(limit, "limit", 1, RUNS_MAX_LIMIT)
            return {"items": await gateway.maintenance_runs(workspace, count)}
        return await as_admin(gateway, request, runs)

    # ---- workspace methods -----------------------------------------------------------------
    def method_route(name: str):
        async def endpoint(workspace: str, request: Request):
            started = time.perf_counter()
            audience = TENANT
            try:
                check_workspace_id(workspace)
                token = bearer_token(request.headers.get("authorization"))
                audience = audience_of(gateway, token)
                caller = await gateway.authorize(workspace, token, name, client_address(request))
                # validated here, before any actor is woken, and sent on validated
                key = idempotency_key(request) if METHODS[name].access == "write" else None
                args = parse_args(METHODS[name], await read_json_object(request))
                if METHODS[name].access == "maintenance":    # audited (trigger=manual)
                    result, timings = await gateway.run_maintenance(workspace, name, args, caller)
                else:
                    result, timings = await gateway.call(workspace, name, args, caller, key)
            except Exception as exc:  # noqa: BLE001
                return error_json(exc, audience)
            ingress_ms = (time.perf_counter() - started) * 1e3
            return JSONResponse(result, headers=server_timing(timings, ingress_ms))
        endpoint.__name__ = f"call_{name}"
        return endpoint

    for name, method in METHODS.items():
        schema = method.args.model_json_schema(by_alias=True)
        write = method.access == "write"
        responses = answers(R.METHOD_ANSWERS[name])
        if write:
            responses[200] = {**responses[200], "headers": IDEMPOTENT_REPLAY_DOC}
        api.add_api_route(
            f"/v1/w/{{workspace}}/{name}", method_route(name), methods=["POST"],
            tags=["maintenance (admin token)" if method.access == "maintenance"
                  else f"workspace {method.access}s"],
            summary=f"{name} ({method.access})", name=name, responses=responses,
            openapi_extra={"parameters": [IDEMPOTENCY_KEY_DOC] if write else [],
                           "requestBody": {"required": False, "content": {
                               "application/json": {"schema": schema}}}})
    if transfer is not None:
        add_transfer_routes(api, gateway, transfer)
    mount_console(api)           # the web console at /ui: static files, public routes only
    # under Ray Serve the proxy sends X-Request-Id itself: echo it only without a server id
    api.add_middleware(RequestLog, observe=observe, request_id=request_id,
                       echo_header=request_id is None, routes=api.router.routes)
    return api
