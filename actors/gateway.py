"""What one ingress replica does between HTTP and the actors: authenticate, find the
workspace's actor, call it, and recover from a dead actor.

Caches (per replica): token hashes per workspace (for `token_cache_ttl_s`) and actor handles.
An unauthenticated request is refused before any actor is looked up, so it never wakes one.
A dead actor is re-activated through the directory; the call is retried once for reads. A
write whose actor died under it may or may not have committed, so it is answered 503 -- unless
the actor ended by hibernation (the directory says so): then the write never ran and is sent
again to the re-activated workspace, as is any call refused with `hibernating`.
"""
from __future__ import annotations

import asyncio
import logging
import time

import ray
from ray.exceptions import RayActorError, RayTaskError

from minisphere.auth import check_workspace_id, hash_in, token_hash, same_hash
from minisphere.config import ServiceConfig
from minisphere.errors import MiniSphereError
from minisphere import maintenance as M
from minisphere.http_errors import as_named_error
from minisphere.service_errors import Forbidden, Unauthenticated, WorkspaceUnavailable
from minisphere.durability_config import DurabilityConfig
from minisphere.snapshot_errors import WorkspaceHibernating
from minisphere.snapshots import list_snapshots
from minisphere.surface import METHODS

from .directory_actor import get_directory

log = logging.getLogger("minisphere.gateway")
CALL_TIMEOUT_S = 60.0
REACTIVATE_TIMEOUT_S = 60.0        # how long a call may keep following a hibernating workspace
REACTIVATE_PAUSE_S = 0.05          # first pause before re-activating (grows per attempt)
LIVE_STATUS_TIMEOUT_S = 3.0        # GET /v1/workspaces/{id}: the actor's own snapshot status


def unwrap(exc: BaseException) -> BaseException:
    """The engine error inside a Ray task error, when there is one."""
    if isinstance(exc, RayTaskError):
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException):
            return cause
    return exc


class Gateway:
    def __init__(self, config: ServiceConfig):
        self.config = config
        self.directory = get_directory(config)
        self._admin_hash = token_hash(config.admin_token)
        self._tokens: dict[str, tuple[list[str], float]] = {}
        self._handles: dict = {}
        self._store = None                     # snapshot store, made on first use

    async def ask_directory(self, method: str, *args, **kwargs):
        try:
            return await getattr(self.directory, method).remote(*args, **kwargs)
        except RayTaskError as exc:
            raise unwrap(exc) from None
        except RayActorError as exc:
            raise WorkspaceUnavailable(f"directory unavailable: {exc.__class__.__name__}") from None

    # ---- auth ----------------------------------------------------------------------------------
    def is_admin(self, token: str) -> bool:
        return same_hash(token_hash(token), self._admin_hash)

    def require_admin(self, token: str) -> None:
        if not self.is_admin(token):
            raise Unauthenticated("this route needs the admin token")

    async def authorize(self, workspace_id: str, token: str, method_name: str) -> None:
        """Raise unless `token` may call `method_name` on `workspace_id`."""
        check_workspace_id(workspace_id)
        if self.is_admin(token):
            return
        candidate = token_hash(token)
        cached = self._tokens.get(workspace_id)
        if cached is None or cached[1] < time.monotonic() or not hash_in(candidate, cached[0]):
            verdict, hashes = await self.ask_directory("authenticate", workspace_id, candidate)
            if verdict == "other":
                raise Forbidden("this token belongs to another workspace")
            if verdict != "ok":
                self._tokens.pop(workspace_id, None)
                raise Unauthenticated("invalid token")
            self._tokens[workspace_id] = (hashes, time.monotonic() + self.config.token_cache_ttl_s)
        method = METHODS.get(method_name)
        if method is not None and method.access == "maintenance":
            raise Forbidden(f"{method_name} is a maintenance method; it needs the admin token")

    def forget(self, workspace_id: str) -> None:
        self._tokens.pop(workspace_id, None)
        self._handles.pop(workspace_id, None)

    # ---- calls ---------------------------------------------------------------------------------
    async def _handle(self, workspace_id: str, stale: bool = False):
        handle = None if stale else self._handles.get(workspace_id)
        if handle is None:
            handle = await self.ask_directory("activate", workspace_id, stale)
            self._handles[workspace_id] = handle
        return handle

    async def call(self, workspace_id: str, method_name: str, body: dict) -> tuple[object, dict]:
        """Run one method on the workspace's actor: (result, timings); engine errors raise."""
        access = METHODS[method_name].access
        deadline = time.monotonic() + REACTIVATE_TIMEOUT_S
        attempt = 0
        while True:
            attempt += 1
            handle = await self._handle(workspace_id)
            sent = time.perf_counter()
            try:
                envelope = await asyncio.wait_for(handle.call.remote(method_name, body),
                                                  CALL_TIMEOUT_S)
            except (RayActorError, asyncio.TimeoutError) as exc:
                self._handles.pop(workspace_id, None)
                log.warning("workspace %s actor failed during %s (attempt %d): %s",
                            workspace_id, method_name, attempt, exc.__class__.__name__)
                # re-activate now: a workspace deleted meanwhile answers 404 here
                await self._handle(workspace_id, stale=True)
                if access == "read" and attempt == 1:
                    continue
                if time.monotonic() < deadline and await self._ended_cleanly(workspace_id,
                                                                            handle):
                    continue            # it hibernated: the call never ran, send it again
                if access == "read":
                    raise WorkspaceUnavailable(
                        f"workspace {workspace_id} is restarting; retry shortly") from None
                raise WorkspaceUnavailable(
                    f"workspace {workspace_id} failed or timed out during {method_name}; the "
                    "write may "
                    "or may not have been applied (capture is safe to repeat: a duplicate is "
                    "answered 'blocked')") from None
            envelope["timings"]["rpc_ms"] = (time.perf_counter() - sent) * 1e3
            if envelope["ok"]:
                if attempt > 1:
                    envelope["timings"]["attempts"] = attempt
                return envelope["result"], envelope["timings"]
            error = envelope["error"]
            if isinstance(error, WorkspaceHibernating) and time.monotonic() < deadline:
                self._handles.pop(workspace_id, None)
                await asyncio.sleep(min(REACTIVATE_PAUSE_S * attempt, 1.0))
                await self._handle(workspace_id, stale=True)
                continue
            raise error if isinstance(error, MiniSphereError) else WorkspaceUnavailable(str(error))

    # ---- maintenance (issue 5) -------------------------------------------------------------------
    async def run_maintenance(self, workspace_id: str, method_name: str,
                              body: dict) -> tuple[object, dict]:
        """A maintenance method called over HTTP (admin token, checked by `authorize`): run like
        any call, recorded as the workspace's due state and audited as trigger=manual."""
        record = M.RunRecord.begin(workspace_id, "manual", M.now_ms())
        try:
            result, timings = await self.call(workspace_id, method_name, body)
        except Exception as exc:
            await self._audit_run(record.finish("error", M.now_ms(),
                                                M.describe_error(as_named_error(exc))))
            raise
        record.add(result)
        try:
            await self.ask_directory("maintenance", "record_pass", workspace_id,
                                     result.get("nextDueAt"), result["remaining"],
                                     record.startedAt)
        except Exception:  # noqa: BLE001 - the pass ran; the scheduler just will not skip
            log.warning("could not record the due state of %s", workspace_id, exc_info=True)
        await self._audit_run(record.finish("ok", M.now_ms()))
        return result, timings

    async def _audit_run(self, row: dict) -> None:
        try:
            await self.ask_directory("maintenance", "record_run", row)
        except Exception:  # noqa: BLE001 - never turn a done pass into an error
            log.error("could not audit maintenance run %s", row["runId"], exc_info=True)

    async def maintenance_runs(self, workspace_id: str | None, limit: int) -> list[dict]:
        return await self.ask_directory("maintenance", "runs", workspace_id, limit)

    async def _ended_cleanly(self, workspace_id: str, handle) -> bool:
        try:
            return bool(await self.ask_directory("ended_cleanly", workspace_id,
                                                 handle._actor_id.hex()))  # noqa: SLF001
        except MiniSphereError:
            return False

    # ---- durability (admin) ----------------------------------------------------------------------
    async def actor_call(self, workspace_id: str, method: str, *args):
        """An admin call on the workspace's actor (activating it), following hibernation."""
        check_workspace_id(workspace_id)
        deadline = time.monotonic() + REACTIVATE_TIMEOUT_S
        stale, attempt = False, 0
        while True:
            attempt += 1
            handle = await self._handle(workspace_id, stale)
            try:
                envelope = await getattr(handle, method).remote(*args)
            except RayActorError:
                self._handles.pop(workspace_id, None)
                stale = True
                if attempt == 1 or (time.monotonic() < deadline
                                    and await self._ended_cleanly(workspace_id, handle)):
                    continue
                raise WorkspaceUnavailable(f"workspace {workspace_id} restarted during "
                                           f"{method}; retry shortly") from None
            if envelope["ok"]:
                return envelope["result"]
            error = envelope["error"]
            if isinstance(error, WorkspaceHibernating) and time.monotonic() < deadline:
                self._handles.pop(workspace_id, None)
                stale = True
                await asyncio.sleep(min(REACTIVATE_PAUSE_S * attempt, 1.0))
                continue
            raise error if isinstance(error, MiniSphereError) else WorkspaceUnavailable(str(error))

    async def snapshot(self, workspace_id: str) -> dict:
        return await self.actor_call(workspace_id, "snapshot", "manual")

    async def restore(self, workspace_id: str, version: str) -> dict:
        result = await self.actor_call(workspace_id, "restore", version)
        return {"workspace": workspace_id, "version": result["version"],
                "entryCount": result["manifest"].get("entryCount"),
                "previousFileKeptAt": result["aside"], "tookMs": result["tookMs"]}

    def _snapshot_store(self):
        if self._store is None:
            self._store = DurabilityConfig.from_dict(self.config.durability).make_store()
        return self._store

    async def list_snapshots(self, workspace_id: str) -> list[dict]:
        """Versions in the store (no actor is woken for this)."""
        check_workspace_id(workspace_id)
        await self.ask_directory("get", workspace_id)        # NotFound when absent
        return await asyncio.to_thread(list_snapshots, self._snapshot_store(), workspace_id)

    # ---- admin -----------------------------------------------------------------------------------
    async def create(self, workspace_id, blueprint, label) -> dict:
        return await self.ask_directory("create", workspace_id, blueprint, label)

    async def list(self, limit: int, after: str) -> list[dict]:
        return await self.ask_directory("list", limit, after)

    async def get(self, workspace_id: str) -> dict:
        check_workspace_id(workspace_id)
        record = await self.ask_directory("get", workspace_id)
        durability = record.get("durability") or {}
        if durability.get("resident"):        # the actor's own, current snapshot status
            try:
                handle = await self._handle(workspace_id)
                live = await asyncio.wait_for(handle.durability.remote(), LIVE_STATUS_TIMEOUT_S)
                durability.update(live)
            except Exception as exc:  # noqa: BLE001 - the stored status is shown instead
                log.info("live durability status of %s unavailable: %r", workspace_id, exc)
        return record

    async def delete(self, workspace_id: str) -> dict:
        check_workspace_id(workspace_id)
        self.forget(workspace_id)
        return await self.ask_directory("delete", workspace_id)

    async def ready(self) -> bool:
        await self.directory.list.remote(1)
        return True
