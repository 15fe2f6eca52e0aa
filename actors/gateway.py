"""What one ingress replica does between HTTP and the actors: authenticate, find the
workspace's actor, call it, and recover from a dead actor.

Caches (per replica): token hashes per workspace (for `token_cache_ttl_s`) and actor handles.
An unauthenticated request is refused before any actor is looked up, so it never wakes one.
A dead actor is re-activated through the directory; the call is retried once for reads. A
write whose actor died under it may or may not have committed, so it is answered 503.
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
from minisphere.service_errors import Forbidden, Unauthenticated, WorkspaceUnavailable
from minisphere.surface import METHODS

from .directory_actor import get_directory

log = logging.getLogger("minisphere.gateway")
CALL_TIMEOUT_S = 60.0


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
        for attempt in (1, 2):
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
                return envelope["result"], envelope["timings"]
            error = envelope["error"]
            raise error if isinstance(error, MiniSphereError) else WorkspaceUnavailable(str(error))
        raise WorkspaceUnavailable(f"workspace {workspace_id} is unavailable")  # pragma: no cover

    # ---- admin -----------------------------------------------------------------------------------
    async def create(self, workspace_id, blueprint, label) -> dict:
        return await self.ask_directory("create", workspace_id, blueprint, label)

    async def list(self, limit: int, after: str) -> list[dict]:
        return await self.ask_directory("list", limit, after)

    async def get(self, workspace_id: str) -> dict:
        check_workspace_id(workspace_id)
        return await self.ask_directory("get", workspace_id)

    async def delete(self, workspace_id: str) -> dict:
        check_workspace_id(workspace_id)
        self.forget(workspace_id)
        return await self.ask_directory("delete", workspace_id)

    async def ready(self) -> bool:
        await self.directory.list.remote(1)
        return True
