"""Admin routes of workspaces and their durability (the admin token, except where noted):

POST/GET /v1/workspaces, GET/DELETE /v1/workspaces/{id}
POST /v1/workspaces/{id}/snapshot             take a snapshot now
GET  /v1/workspaces/{id}/snapshots            its versions (admin or the workspace's token)
POST /v1/workspaces/{id}/hibernate            snapshot if changed, close, release its actor
POST /v1/workspaces/{id}/restore {version}    restore a snapshot version
POST /v1/workspaces/{id}/restore-to-moment {timestamp}   restore any second the replica holds
POST /v1/workspaces/{id}/snapshots/prune {keep}
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Optional

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, field_validator

from minisphere.control.auth import WORKSPACE_ID_PATTERN, check_workspace_id
from minisphere.control.blueprints import VectorBindingSpec, parse_blueprint
from minisphere.durability.snapshots.layout import VERSION_PATTERN as SNAPSHOT_VERSION_PATTERN
from minisphere.http import links
from minisphere.http import service_responses as S
from minisphere.http.callers import (
    WORKSPACE_ID_SHAPE,
    AdminGateway,
    WorkspaceCall,
    WorkspaceId,
    workspace_caller,
)
from minisphere.http.handling import query_integer, read_spec
from minisphere.http.route_docs import answers, json_body
from minisphere.http.routes import Routes
from minisphere.wire.records import CreatedWorkspace, Deleted, WorkspaceDetail, WorkspaceRecord
from minisphere.wire.stored_states import (
    Pruned,
    Restored,
    RestoredToMoment,
    SnapshotManifest,
    VectorBindingState,
)

WORKSPACES_MAX_LIMIT = 1000
PRUNE_KEEP_MAX = 1000
AFTER_MAX_CHARS = 100
MOMENT_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"
MOMENT_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

routes = Routes(tags=["admin"])


class CreateWorkspace(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # enforced as WORKSPACE_ID_PATTERN here (check_workspace_id refuses a final '-' after);
    # published as the one pattern of both
    id: Optional[
        Annotated[
            StrictStr,
            Field(pattern=WORKSPACE_ID_PATTERN, json_schema_extra={"pattern": WORKSPACE_ID_SHAPE}),
        ]
    ] = None
    blueprint: Optional[dict[str, Any]] = None
    label: Optional[Annotated[StrictStr, Field(max_length=200)]] = None


class RestoreWorkspace(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: Annotated[
        StrictStr,
        Field(
            pattern=SNAPSHOT_VERSION_PATTERN.pattern, description="a version from GET .../snapshots"
        ),
    ]


class RestoreToMoment(BaseModel):
    model_config = ConfigDict(extra="forbid")
    timestamp: Annotated[
        StrictStr,
        Field(
            pattern=MOMENT_PATTERN,
            description="UTC, RFC 3339 to the second, e.g. 2026-12-02T06:00:00Z; not in the future",
        ),
    ]

    @field_validator("timestamp")
    @classmethod
    def a_past_moment(cls, value: str) -> str:
        try:
            moment = datetime.strptime(value, MOMENT_FORMAT).replace(tzinfo=UTC)
        except ValueError:
            raise ValueError("not a date and time that exists") from None
        if moment > datetime.now(UTC):
            raise ValueError("is in the future: the replica holds only what has happened")
        return value


class PruneSnapshots(BaseModel):
    model_config = ConfigDict(extra="forbid")
    keep: Annotated[
        StrictInt, Field(ge=1, le=PRUNE_KEEP_MAX, description="versions to keep, the newest first")
    ] = 1


# a workspace's own token may list its snapshots too: authorized like a method call
SnapshotsCaller = Annotated[WorkspaceCall, workspace_caller("listSnapshots", "workspace_id")]


@routes.post(
    "/v1/workspaces",
    status_code=201,
    responses=answers(CreatedWorkspace, 201, links.CREATED_WORKSPACE),
    openapi_extra=json_body(CreateWorkspace),
)
async def create_workspace(request: Request, gateway: AdminGateway) -> JSONResponse:
    spec = await read_spec(request, CreateWorkspace, "createWorkspace")
    if spec.blueprint is not None:
        parse_blueprint(spec.blueprint)  # refused here (422), before the directory
    created = await gateway.create(spec.id, spec.blueprint, spec.label)
    return JSONResponse(created, status_code=201)


@routes.get("/v1/workspaces", responses=answers(S.WorkspaceList))
async def list_workspaces(
    gateway: AdminGateway, limit: str = str(WORKSPACES_MAX_LIMIT), after: str = ""
) -> dict[str, list[WorkspaceRecord]]:
    count = query_integer(limit, "limit", 1, WORKSPACES_MAX_LIMIT)
    return {"items": await gateway.list(count, after[:AFTER_MAX_CHARS])}


@routes.get("/v1/workspaces/{workspace_id}", responses=answers(WorkspaceDetail))
async def get_workspace(workspace_id: WorkspaceId, gateway: AdminGateway) -> WorkspaceDetail:
    return await gateway.get(check_workspace_id(workspace_id))


@routes.delete("/v1/workspaces/{workspace_id}", responses=answers(Deleted))
async def delete_workspace(workspace_id: WorkspaceId, gateway: AdminGateway) -> Deleted:
    return await gateway.delete(check_workspace_id(workspace_id))


@routes.post(
    "/v1/workspaces/{workspace_id}/snapshot",
    summary="Take a snapshot now (returns its manifest)",
    responses=answers(SnapshotManifest),
)
async def snapshot_workspace(workspace_id: WorkspaceId, gateway: AdminGateway) -> SnapshotManifest:
    return await gateway.durability_admin.snapshot(check_workspace_id(workspace_id))


@routes.get(
    "/v1/workspaces/{workspace_id}/snapshots",
    summary="List snapshot versions, oldest first (admin or the workspace's token)",
    responses=answers(S.SnapshotList),
)
async def list_workspace_snapshots(
    workspace_id: WorkspaceId, call: SnapshotsCaller
) -> dict[str, list[SnapshotManifest]]:
    return {"items": await call.gateway.durability_admin.list_snapshots(workspace_id)}


@routes.post(
    "/v1/workspaces/{workspace_id}/hibernate",
    summary="Hibernate now: snapshot if changed, close, release its actor",
    responses=answers(S.Hibernated),
)
async def hibernate_workspace(workspace_id: WorkspaceId, gateway: AdminGateway) -> S.Hibernated:
    return await gateway.durability_admin.hibernate(check_workspace_id(workspace_id))


@routes.post(
    "/v1/workspaces/{workspace_id}/restore",
    summary="Restore a snapshot version (point-in-time restore)",
    responses=answers(Restored),
    openapi_extra=json_body(RestoreWorkspace, required=True),
)
async def restore_workspace(
    workspace_id: WorkspaceId, request: Request, gateway: AdminGateway
) -> Restored:
    check_workspace_id(workspace_id)
    spec = await read_spec(request, RestoreWorkspace, "restore", required=True)
    return await gateway.durability_admin.restore(workspace_id, spec.version)


@routes.post(
    "/v1/workspaces/{workspace_id}/restore-to-moment",
    summary="Restore the state the workspace had at a moment (needs continuous "
    "replication: any second the replica still holds)",
    responses=answers(RestoredToMoment),
    openapi_extra=json_body(RestoreToMoment, required=True),
)
async def restore_workspace_to_moment(
    workspace_id: WorkspaceId, request: Request, gateway: AdminGateway
) -> RestoredToMoment:
    check_workspace_id(workspace_id)
    spec = await read_spec(request, RestoreToMoment, "restore-to-moment", required=True)
    return await gateway.durability_admin.restore_to_moment(workspace_id, spec.timestamp)


@routes.post(
    "/v1/workspaces/{workspace_id}/snapshots/prune",
    summary="Keep only the newest versions (after a forget: drop the versions that "
    "still hold the forgotten text)",
    responses=answers(Pruned),
    openapi_extra=json_body(PruneSnapshots, required=False),
)
async def prune_workspace_snapshots(
    workspace_id: WorkspaceId, request: Request, gateway: AdminGateway
) -> Pruned:
    check_workspace_id(workspace_id)
    spec = await read_spec(request, PruneSnapshots, "prune")
    return await gateway.durability_admin.prune_snapshots(workspace_id, spec.keep)


@routes.post(
    "/v1/workspaces/{workspace_id}/vector-binding",
    summary="Move the workspace to another embedding provider: its blueprint names it "
    "at once, and every entry is re-embedded while the workspace serves",
    responses=answers(VectorBindingState, status=202),
    openapi_extra=json_body(VectorBindingSpec, required=True),
)
async def rebind_workspace_vectors(
    workspace_id: WorkspaceId, request: Request, gateway: AdminGateway
) -> JSONResponse:
    check_workspace_id(workspace_id)
    spec = await read_spec(request, VectorBindingSpec, "vector-binding", required=True)
    state = await gateway.durability_admin.rebind_vectors(workspace_id, spec.model_dump())
    return JSONResponse(state, status_code=202)


@routes.get(
    "/v1/workspaces/{workspace_id}/vector-binding",
    summary="The binding the blueprint names, the file's, and a rebind's progress",
    responses=answers(VectorBindingState),
)
async def get_workspace_vector_binding(
    workspace_id: WorkspaceId, gateway: AdminGateway
) -> VectorBindingState:
    return await gateway.durability_admin.vector_binding(check_workspace_id(workspace_id))
