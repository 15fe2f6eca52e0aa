"""What one ingress replica does between HTTP and the actors: authenticate, find the
workspace's actor, call it, and recover from a dead actor.

Caches (per replica): token grants per workspace and refused tokens (the `TokenCache` of
`minisphere.control.token_cache`, which also budgets failed authentications per client address)
and actor handles. An unauthenticated request is refused before any actor is looked up, so it
never wakes one; the workspace actor checks the token again on every call against the grants
it holds, so a revoked token is refused at once even while this replica's cache still knows it.
Calls go through the resend loop of `actors/workspace_reach.py`: a dead actor is re-activated
through the directory and a read is sent once more; so is a write that carries an idempotency
key (sent again with its key it cannot apply twice: the workspace file knows whether it
committed). A write without a key whose actor died under it may or may not have committed, so
it is answered 503 -- unless the actor ended by hibernation (then the write never ran and is
sent again), as is any call refused with `hibernating`. The replica also sends each warm spare
its first message before a wake hands it out (`spare_contacts.py`).
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import time
from typing import Any

from actors.directory.actor import get_directory
from actors.handles import Handle
from actors.ingress.durability_admin import DurabilityAdmin
from actors.ingress.query_encoders import QueryEncoders
from actors.ingress.spare_contacts import SpareContacts
from actors.sent_queries import RecallReply
from actors.workspace_call import WorkspaceCall
from actors.workspace_reach import KEYED_WRITE_RESENDS, WorkspaceReach, ask
from minisphere.control.auth import check_workspace_id, same_hash, token_hash
from minisphere.control.call_pressure import CallPressure
from minisphere.control.token_cache import AdminCheck, TokenCache
from minisphere.engine.clock import epoch_ms
from minisphere.engine.methods import METHODS
from minisphere.errors import Overloaded, Unauthenticated, as_named_error
from minisphere.maintenance import runs as M
from minisphere.settings import Settings
from minisphere.wire.actor_methods import DirectoryMethod, ServedMethod
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
    WorkspaceTokenIdentity,
)
from minisphere.wire.timings import CallTimings

log = logging.getLogger("minisphere.gateway")
# a whole call, its wake and every resend included: below the front's 60 s request limit
# (infra/serve_config.yaml), so the caller gets the service's 503 + Retry-After, not a bare 408
CALL_TIMEOUT_S = 50.0
LIVE_STATUS_TIMEOUT_S = 3.0  # GET /v1/workspaces/{id}: the actor's own snapshot status
UNKNOWN_CLIENT = "unknown"  # a caller whose address the server was not told


def _resend_policy(
    workspace_id: str, method_name: str, idempotency_key: str | None
) -> tuple[int, str]:
    """How often a call whose actor died under it is sent again, and what a caller is told when
    it cannot be: a read once, a keyed write as often as KEYED_WRITE_RESENDS (it cannot apply
    twice), a write without a key never (it may or may not have been applied)."""
    if METHODS[method_name].access == "read":
        return 1, f"workspace {workspace_id} is restarting; retry shortly"
    if idempotency_key is not None:
        return KEYED_WRITE_RESENDS, (
            f"workspace {workspace_id} failed or timed out during {method_name}; send it again "
            "with the same Idempotency-Key: it is applied at most once"
        )
    return 0, (
        f"workspace {workspace_id} failed or timed out during {method_name}; the write "
        "may or may not have been applied (send writes with an Idempotency-Key to make "
        "them safe to repeat)"
    )


class Gateway:
    def __init__(self, settings: Settings, directory: Handle | None = None):
        """`directory`: the directory actor's handle (default: the named singleton); a test
        passes one whose methods' `.remote()` are awaitables, to run replicas in process."""
        self.settings = settings
        self.directory = directory if directory is not None else get_directory(settings)
        self.directory.start.remote()  # warm the spare pool; never waited for
        self.pressure = CallPressure(settings.residency.wake_shed_latency_ms / 1e3)
        self.reach = WorkspaceReach(self.directory, wake_gate=self._admit_wake)
        self.spare_contacts = SpareContacts(self.directory)  # started by the first call
        self.query_encoders = QueryEncoders()
        self.admin_hash = token_hash(settings.admin_token)
        self.token_cache = TokenCache(self.ask_directory, settings.token_cache_ttl_s)
        self.admin = AdminCheck(
            self.admin_hash,
            lambda candidate: self.ask_directory(DirectoryMethod.WHOAMI, candidate),
            known_ttl_s=settings.token_cache_ttl_s,
        )
        self.durability_admin = DurabilityAdmin(
            settings, self.reach, self.ask_directory, self.admin_hash
        )

    async def ask_directory(self, method: DirectoryMethod | str, *args: Any) -> Any:
        """The directory's `method(*args)`; a name it has no method for (the token cache
        names its one question as a string) raises ValueError before anything is sent."""
        return await ask(self.directory, DirectoryMethod(method), *args)

    def _admit_wake(self, workspace_id: str) -> None:
        """Refuse a wake while the calls to resident workspaces are late here."""
        if not self.pressure.admits_wake(time.monotonic()):
            raise Overloaded(
                f"workspace {workspace_id} was not woken: calls to the workspaces already "
                f"awake take longer than {self.pressure.target_s * 1e3:g} ms here",
                retry_after_s=self.pressure.retry_after_s(),
            )

    # ---- auth ----------------------------------------------------------------------------------
    def is_admin(self, token: str) -> bool:
        return self.admin.is_admin(token)

    async def require_admin(self, token: str, client: str = UNKNOWN_CLIENT) -> None:
        """Raise unless `token` is the admin token; a wrong one spends the client's budget of
        admin guesses (a workspace token, a valid token without the rights, does not)."""
        await self.admin.require(token, client)

    async def authorize(
        self, workspace_id: str, token: str, method_name: str, client: str = UNKNOWN_CLIENT
    ) -> str:
        """Raise unless `token` may call `method_name` on `workspace_id`; returns the token's
        hash, which the workspace actor checks again on every call. `client`: the caller's
        address, whose failed authentications are budgeted."""
        check_workspace_id(workspace_id)
        candidate = token_hash(token)
        if same_hash(candidate, self.admin_hash):
            return candidate
        method = METHODS.get(method_name)
        # a contract method is checked again by the workspace actor against its authoritative
        # token set; any other tenant route (the snapshot listing) is checked here, against
        # the directory's, never against a cache that may hold a revoked grant
        grant = await self.token_cache.grant_of(
            workspace_id, candidate, client, authoritative=method is None
        )
        if method is not None:
            grant.require(method_name, method.access)
        return candidate

    async def whoami(self, token: str, client: str = UNKNOWN_CLIENT) -> Identity:
        """What the token is (admin, or a workspace grant without its secret)."""
        candidate = token_hash(token)
        if same_hash(candidate, self.admin_hash):
            return {"kind": "admin"}
        found = await self.token_cache.budget.attempt(
            client,
            lambda: self.ask_directory(DirectoryMethod.WHOAMI, candidate),
            lambda answer: answer is not None,
        )
        if found is None:
            raise Unauthenticated("invalid token")
        grant: WorkspaceTokenIdentity = found
        return grant

    def forget(self, workspace_id: str) -> None:
        self.token_cache.forget(workspace_id)
        self.reach.forget(workspace_id)
        self.query_encoders.forget(workspace_id)

    # ---- calls ---------------------------------------------------------------------------------
    async def call(
        self,
        workspace_id: str,
        method_name: str,
        body: Any,
        caller: str,
        idempotency_key: str | None = None,
    ) -> tuple[Any, CallTimings]:
        """Run one method on the workspace's actor as `caller` (the token hash `authorize`
        returned): (result, timings); engine errors raise. Timings say `replayed` when a
        keyed write was answered from its stored result."""
        resends, unknown = _resend_policy(workspace_id, method_name, idempotency_key)
        self.spare_contacts.start()
        # a call to a workspace already awake is the admitted work whose pace gates new wakes
        ticket = self.pressure.begin(time.monotonic()) if self.reach.holds(workspace_id) else None
        attempts = 0
        recall = method_name == "recall"
        # only to a workspace already awake: a wake takes far longer than the embedding, and
        # one refused under overload would have spent the embedder's time for nothing
        sent_query = (
            self.query_encoders.send(workspace_id, body) if recall and ticket is not None else None
        )
        try:
            reply, attempts, rpc_ms = await self.reach.call(
                workspace_id,
                ServedMethod.CALL,
                WorkspaceCall(method_name, body, caller, idempotency_key, sent_query),
                idempotent_attempts=resends,
                timeout_s=CALL_TIMEOUT_S,
                deadline_s=CALL_TIMEOUT_S,
                unknown_outcome=unknown,
            )
        except Unauthenticated:
            self.token_cache.forget(workspace_id)  # the actor knows better: revoked, expired
            raise
        finally:
            if ticket is not None:
                self.pressure.end(ticket, time.monotonic(), counted=attempts == 1)
        if isinstance(reply, RecallReply):
            self.query_encoders.learn(workspace_id, reply.query_encoder)
        timings = reply.timings.copy()
        timings["rpc_ms"] = rpc_ms
        if attempts > 1:
            timings["attempts"] = attempts
        return reply.unwrap(), timings

    # ---- maintenance -------------------------------------------------------------------
    async def run_maintenance(
        self, workspace_id: str, method_name: str, body: Any, caller: str
    ) -> tuple[object, CallTimings]:
        """A maintenance method called over HTTP (admin token, checked by `authorize`): run like
        any call, recorded as the workspace's due state and audited as trigger=manual."""
        record = M.RunRecord.begin(workspace_id, "manual", epoch_ms())
        try:
            result, timings = await self.call(workspace_id, method_name, body, caller)
        except Exception as exc:
            await self._audit_run(
                record.finish("error", epoch_ms(), M.describe_error(as_named_error(exc)))
            )
            raise
        record.add(result)
        try:
            await self.ask_directory(
                DirectoryMethod.MAINTENANCE,
                "record_pass",
                workspace_id,
                result.get("nextDueAt"),
                result["remaining"],
                record.startedAt,
            )
        except Exception:  # the pass ran; the scheduler just will not skip the workspace
            log.warning("could not record the due state of %s", workspace_id, exc_info=True)
        await self._audit_run(record.finish("ok", epoch_ms()))
        return result, timings

    async def _audit_run(self, row: MaintenanceRun) -> None:
        try:
            await self.ask_directory(DirectoryMethod.MAINTENANCE, "record_run", row)
        except Exception:  # never turn a done pass into an error
            log.error("could not audit maintenance run %s", row["runId"], exc_info=True)

    async def maintenance_runs(
        self, workspace_id: str | None, limit: int
    ) -> builtins.list[MaintenanceRun]:
        runs: builtins.list[MaintenanceRun] = await self.ask_directory(
            DirectoryMethod.MAINTENANCE, "runs", workspace_id, limit
        )
        return runs

    # ---- admin -----------------------------------------------------------------------------------
    async def create(
        self, workspace_id: str | None, blueprint: dict[str, Any] | None, label: str | None
    ) -> CreatedWorkspace:
        created: CreatedWorkspace = await self.ask_directory(
            DirectoryMethod.CREATE, workspace_id, blueprint, label
        )
        return created

    async def list(self, limit: int, after: str) -> builtins.list[WorkspaceRecord]:
        records: builtins.list[WorkspaceRecord] = await self.ask_directory(
            DirectoryMethod.LIST, limit, after
        )
        return records

    async def get(self, workspace_id: str) -> WorkspaceDetail:
        check_workspace_id(workspace_id)
        record: WorkspaceDetail = await self.ask_directory(DirectoryMethod.GET, workspace_id)
        await self._add_live_durability(workspace_id, record["durability"])
        return record

    async def durability(self, workspace_id: str) -> dict[str, Any]:
        """A workspace's snapshot and replication status: its actor's own when resident (the
        replica's lag is known only there), else what the directory recorded."""
        durability: dict[str, Any] = await self.ask_directory(
            DirectoryMethod.DURABILITY, workspace_id
        )
        await self._add_live_durability(workspace_id, durability)
        return durability

    async def _add_live_durability(self, workspace_id: str, durability: dict[str, Any]) -> None:
        if not durability.get("resident"):
            return
        try:
            handle = await self.reach.handle(workspace_id)
            live = await asyncio.wait_for(
                handle.serve.remote(workspace_id, ServedMethod.DURABILITY.value),
                LIVE_STATUS_TIMEOUT_S,
            )
            if live.ok:  # not refused: it serves this workspace
                durability.update(live.unwrap())
        except Exception as exc:  # noqa: BLE001 - the stored status is shown instead
            log.info("live durability status of %s unavailable: %r", workspace_id, exc)

    async def delete(self, workspace_id: str) -> Deleted:
        check_workspace_id(workspace_id)
        self.forget(workspace_id)
        deleted: Deleted = await self.ask_directory(DirectoryMethod.DELETE, workspace_id)
        return deleted

    async def ready(self) -> bool:
        """The replica's own health: deliberately not the directory's. A directory busy with a
        slow snapshot upload must not get every ingress replica marked unhealthy and restarted
        (that would not help it); calls that need it wait for it or answer 503 themselves."""
        return True

    # ---- tokens (admin) --------------------------------------------------------------------------
    async def create_token(
        self, workspace_id: str, scope: str, label: str | None, expires_in_s: int | None
    ) -> TokenIssued:
        check_workspace_id(workspace_id)
        expires_at = epoch_ms() + expires_in_s * 1000 if expires_in_s is not None else None
        issued: TokenIssued = await self.ask_directory(
            DirectoryMethod.CREATE_TOKEN, workspace_id, scope, label, expires_at
        )
        return issued

    async def list_tokens(self, workspace_id: str) -> builtins.list[TokenInfo]:
        check_workspace_id(workspace_id)
        tokens: builtins.list[TokenInfo] = await self.ask_directory(
            DirectoryMethod.LIST_TOKENS, workspace_id
        )
        return tokens

    async def revoke_token(self, workspace_id: str, token_id: str) -> TokenRevoked:
        check_workspace_id(workspace_id)
        answer: TokenRevoked = await self.ask_directory(
            DirectoryMethod.REVOKE_TOKEN, workspace_id, token_id
        )
        self.token_cache.forget(workspace_id)
        return answer
