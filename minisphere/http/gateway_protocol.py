"""What the HTTP layer needs of its gateway, as `typing.Protocol`s (no Ray here), by audience:
`WorkspaceGateway` checks callers, runs their calls and the operator's workspace and token
records; its `durability_admin` (`DurabilityOperations`) is the operator's snapshots, restores,
hibernation and vector bindings.

The service's gateway (`actors/ingress/gateway.py`, over Ray's actors) and the tests' in-process
one (`tests/support/engine_gateway.py`, over engine files) both implement them; the routes, the
MCP endpoint and the caller dependencies call nothing else.
"""

from __future__ import annotations

from typing import Any, Protocol

from minisphere.http.service_responses import Hibernated
from minisphere.wire.records import (
    CreatedWorkspace,
    Deleted,
    Identity,
    MaintenanceRun,
    TokenInfo,
    TokenIssued,
    TokenRevoked,
    WorkspaceDetail,
    WorkspaceRecord,
)
from minisphere.wire.stored_states import (
    Pruned,
    Restored,
    RestoredToMoment,
    SnapshotManifest,
    VectorBindingState,
)
from minisphere.wire.timings import CallTimings

# lists of answers; a `list` method on the protocol would shadow the builtin in its body
SnapshotManifests = list[SnapshotManifest]
WorkspaceRecords = list[WorkspaceRecord]
TokenInfos = list[TokenInfo]
MaintenanceRuns = list[MaintenanceRun]


class DurabilityOperations(Protocol):
    """The operator's operations on a workspace's stored states and its actor."""

    async def snapshot(self, workspace_id: str) -> SnapshotManifest: ...

    async def list_snapshots(self, workspace_id: str) -> SnapshotManifests: ...

    async def hibernate(self, workspace_id: str) -> Hibernated: ...

    async def restore(self, workspace_id: str, version: str) -> Restored: ...

    async def restore_to_moment(self, workspace_id: str, moment: str) -> RestoredToMoment: ...

    async def prune_snapshots(self, workspace_id: str, keep: int) -> Pruned: ...

    async def rebind_vectors(
        self, workspace_id: str, vector: dict[str, Any]
    ) -> VectorBindingState: ...

    async def vector_binding(self, workspace_id: str) -> VectorBindingState: ...


class WorkspaceGateway(Protocol):
    @property
    def durability_admin(self) -> DurabilityOperations:
        """The operator's durability operations (a read-only member: each gateway has its own
        class of them)."""
        ...

    # ---- auth ----------------------------------------------------------------------------------
    def is_admin(self, token: str) -> bool:
        """The admin token (never raises for a wrong one)."""
        ...

    async def require_admin(self, token: str, client: str) -> None:
        """Raise unless `token` is the admin token; a wrong one spends `client`'s budget."""
        ...

    async def authorize(self, workspace_id: str, token: str, method_name: str, client: str) -> Any:
        """Raise unless `token` may call `method_name` on the workspace; the caller to send
        on with the call."""
        ...

    async def whoami(self, token: str, client: str) -> Identity: ...

    # ---- calls ---------------------------------------------------------------------------------
    async def call(
        self,
        workspace_id: str,
        method_name: str,
        body: Any,
        caller: Any,
        idempotency_key: str | None = None,
    ) -> tuple[Any, CallTimings]:
        """One contract method as `caller` (what `authorize` answered): (result, timings)."""
        ...

    async def run_maintenance(
        self, workspace_id: str, method_name: str, body: Any, caller: Any
    ) -> tuple[Any, CallTimings]:
        """A maintenance method, audited as a manual run."""
        ...

    async def maintenance_runs(self, workspace_id: str | None, limit: int) -> MaintenanceRuns: ...

    # ---- workspaces (admin) --------------------------------------------------------------------
    async def create(
        self, workspace_id: str | None, blueprint: dict[str, Any] | None, label: str | None
    ) -> CreatedWorkspace: ...

    async def list(self, limit: int, after: str) -> WorkspaceRecords: ...

    async def get(self, workspace_id: str) -> WorkspaceDetail: ...

    async def delete(self, workspace_id: str) -> Deleted: ...

    # ---- tokens (admin) ------------------------------------------------------------------------
    async def create_token(
        self, workspace_id: str, scope: str, label: str | None, expires_in_s: int | None
    ) -> TokenIssued: ...

    async def list_tokens(self, workspace_id: str) -> TokenInfos: ...

    async def revoke_token(self, workspace_id: str, token_id: str) -> TokenRevoked: ...
