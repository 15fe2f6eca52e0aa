"""Tokens: who a token is, issuing and revoking them, and handing a resident workspace actor
its current token set — the authoritative one it checks every call against.

A change answers only once the resident actor holds the new set, so the very next call with a
revoked token is refused whichever ingress sends it. An actor that cannot be told (hung, dead,
restarting) is retired rather than left serving with the old set: the next call wakes a new
actor that starts with the current set (committed writes are in the file; a call cut short
was never answered).
"""

from __future__ import annotations

import logging

from minisphere.control.auth import TokenGrant, same_hash
from minisphere.control.plane import ControlPlane
from minisphere.directory.activation import Activator
from minisphere.directory.actor_runtime import ActorRuntime
from minisphere.directory.launch import WorkspaceLaunch
from minisphere.directory.residents import ResidentTable
from minisphere.wire.actor_methods import WorkspaceActorMethod
from minisphere.wire.records import (
    AdminIdentity,
    TokenIssued,
    TokenRevoked,
    WorkspaceTokenIdentity,
)

log = logging.getLogger("minisphere.directory")
PUSH_GRANTS_TIMEOUT_S = 10.0  # handing a resident actor its new token set


class TokenGrants:
    def __init__(
        self,
        control: ControlPlane,
        runtime: ActorRuntime,
        residents: ResidentTable,
        activator: Activator,
        admin_token_hash: str,
    ):
        self.control = control
        self.runtime = runtime
        self.residents = residents
        self.activator = activator  # retires an actor that cannot be told
        self._admin_hash = admin_token_hash

    def authenticate(self, workspace_id: str, candidate_hash: str) -> tuple[str, list[TokenGrant]]:
        """("ok", grants) | ("admin", []) | ("expired", []) | ("other", []) | ("invalid", [])."""
        if same_hash(candidate_hash, self._admin_hash):
            return "admin", []
        return self.control.tokens.authenticate(workspace_id, candidate_hash)

    def whoami(self, candidate_hash: str) -> AdminIdentity | WorkspaceTokenIdentity | None:
        """What a token is: {"kind": "admin"}, its workspace grant, or None (unknown)."""
        if same_hash(candidate_hash, self._admin_hash):
            return {"kind": "admin"}
        return self.control.tokens.whoami(candidate_hash)

    async def create(
        self, workspace_id: str, scope: str, label: str | None, expires_at: int | None
    ) -> TokenIssued:
        issued = self.control.tokens.issue(workspace_id, scope, label, expires_at)
        await self.push(workspace_id)
        return issued

    async def revoke(self, workspace_id: str, token_id: str) -> TokenRevoked:
        self.control.tokens.revoke(workspace_id, token_id)
        await self.push(workspace_id)
        return {"revoked": token_id}

    async def push(self, workspace_id: str) -> None:
        """Hand the resident actor the current token set (a bind in flight re-checks the set
        at its end), or retire it."""
        resident = self.residents.get(workspace_id)
        if resident is None:
            return
        try:
            await self.runtime.call(
                resident.handle,
                WorkspaceActorMethod.SET_TOKENS,
                tuple(self.control.tokens.grants(workspace_id)),
                timeout_s=PUSH_GRANTS_TIMEOUT_S,
            )
        except Exception as exc:  # noqa: BLE001 - whatever the cause, it must not keep serving
            log.warning(
                "could not hand the new token set to %s's actor (%s): retiring it",
                workspace_id,
                exc.__class__.__name__,
            )
            await self.activator.retire(workspace_id, resident.handle)

    def binding_of_actor(
        self, actor_name: str
    ) -> tuple[WorkspaceLaunch, tuple[TokenGrant, ...]] | None:
        """(launch, token grants) of the workspace this actor is bound to, or None: what an
        actor Ray restarted after a crash asks."""
        workspace_id = self.control.workspace_of_actor(actor_name)
        if workspace_id is None:
            return None
        return self.activator.launch(workspace_id), tuple(self.control.tokens.grants(workspace_id))
