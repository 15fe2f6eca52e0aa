"""A client for agents that run on the Ray cluster itself: the HTTP client's methods, auth and
errors, without the HTTP proxy or the ingress replica.

    from actors.in_cluster import connect_in_cluster
    notes = connect_in_cluster("notes", token)          # from a Ray driver, task or actor
    notes.capture("Postgres is the system of record", tags=["db"])
    notes.recall("system of record", top_k=5).items[0].breakdown

One authenticated lookup (the directory checks the token, and only then activates the
workspace: a wrong token never wakes it), then every call goes straight to the workspace's
actor, which checks the token hash again on every call. Dead or hibernating actors are
followed exactly as the ingress does (`actors/workspace_reach.py`). Errors raise the HTTP client's
`ServiceError(status, code, message)` with the status the HTTP route would have answered.
A call refused as not run and worth asking again later (`Overloaded`, `NoWorkspaceSlots`: a
named error with `retry_after_s`, a 503 with Retry-After over HTTP) is sent again as the HTTP
client sends it, by the same policy (`minisphere.client.client.OverloadRetry`): at most
`overload_retries=` times (default `OVERLOAD_RETRIES`, 3; 0: never), each after `retry_after_s`
times a jitter factor; the last refusal's `ServiceError` carries `retry_after_s`.
`AsyncInClusterWorkspace` has the same methods as coroutines.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import ray

from actors.directory.actor import DIRECTORY_NAME
from actors.workspace_call import WorkspaceCall
from actors.workspace_reach import KEYED_WRITE_RESENDS, WorkspaceReach, ask
from minisphere.client.exchange import (
    OVERLOAD_RETRIES,
    OverloadRetry,
    ServiceError,
    resend_is_safe,
)
from minisphere.client.workspace import WorkspaceCalls, unparsed
from minisphere.control.auth import check_workspace_id, token_hash
from minisphere.control.token_cache import token_refusal
from minisphere.engine.idempotency import check_key
from minisphere.engine.methods import METHODS
from minisphere.errors import MiniSphereError
from minisphere.http.statuses import error_response
from minisphere.settings import DEFAULT_RAY_NAMESPACE
from minisphere.wire.actor_methods import DirectoryMethod, ServedMethod

CALL_TIMEOUT_S = 60.0


class _InClusterCalls:
    """What the sync and async clients share: the lookup and one call through the resend loop."""

    def __init__(
        self,
        workspace_id: str,
        token: str,
        namespace: str | None = None,
        overload_retries: int = OVERLOAD_RETRIES,
    ):
        if not ray.is_initialized():
            ray.init(address="auto", namespace=namespace or DEFAULT_RAY_NAMESPACE)
        namespace = namespace or ray.get_runtime_context().namespace or DEFAULT_RAY_NAMESPACE
        self.workspace_id = check_workspace_id(workspace_id)
        self.directory = ray.get_actor(DIRECTORY_NAME, namespace=namespace)
        self.reach = WorkspaceReach(self.directory)
        self._caller = token_hash(token)
        self._checked = False
        self.overload_retry = OverloadRetry(overload_retries)

    async def _authenticate(self) -> None:
        verdict, _ = await ask(
            self.directory, DirectoryMethod.AUTHENTICATE, self.workspace_id, self._caller
        )
        if verdict not in ("ok", "admin"):
            raise token_refusal(verdict)  # as the ingress answers: expired, other, invalid
        self._checked = True

    async def _call(
        self, method: str, body: dict[str, Any], parse: Callable[[Any], Any], key: str | None
    ) -> Any:
        """One call; refused as not run (a 503 with retry_after_s), sent again as the HTTP
        client would."""
        return await self.overload_retry.arun(
            lambda: self._attempt(method, body, parse, key), resend_is_safe(method, key)
        )

    async def _attempt(
        self, method: str, body: dict[str, Any], parse: Callable[[Any], Any], key: str | None
    ) -> Any:
        try:
            if method not in METHODS:
                raise MiniSphereError(f"unknown method {method!r}")
            if key is not None:
                check_key(key)
            if not self._checked:
                await self._authenticate()
            read = METHODS[method].access == "read"
            # as the ingress: reads and keyed writes are safe to send again after a failure
            resends = 1 if read else (KEYED_WRITE_RESENDS if key is not None else 0)
            reply, _, _ = await self.reach.call(
                self.workspace_id,
                ServedMethod.CALL,
                WorkspaceCall(method, body, self._caller, key),
                idempotent_attempts=resends,
                timeout_s=CALL_TIMEOUT_S,
            )
        except MiniSphereError as exc:
            status, payload = error_response(exc)
            raise ServiceError(
                status,
                payload["error"]["code"],
                payload["error"]["message"],
                getattr(exc, "retry_after_s", None),
            ) from None
        return parse(reply.unwrap())


class InClusterWorkspace(_InClusterCalls, WorkspaceCalls):
    """The sync client: calls run on one private event-loop thread."""

    def __init__(
        self,
        workspace_id: str,
        token: str,
        namespace: str | None = None,
        overload_retries: int = OVERLOAD_RETRIES,
    ):
        super().__init__(workspace_id, token, namespace, overload_retries)
        self._loop = asyncio.new_event_loop()
        threading.Thread(
            target=self._loop.run_forever, daemon=True, name=f"in-cluster-{workspace_id}"
        ).start()

    def _run(
        self,
        method: str,
        body: dict[str, Any],
        parse: Callable[[Any], Any] = unparsed,
        key: str | None = None,
    ) -> Any:
        return asyncio.run_coroutine_threadsafe(
            self._call(method, body, parse, key), self._loop
        ).result()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)


class AsyncInClusterWorkspace(_InClusterCalls, WorkspaceCalls):
    """The async client: `await notes.capture(...)` on the caller's own event loop."""

    async def _run(
        self,
        method: str,
        body: dict[str, Any],
        parse: Callable[[Any], Any] = unparsed,
        key: str | None = None,
    ) -> Any:
        return await self._call(method, body, parse, key)


def connect_in_cluster(
    workspace_id: str,
    token: str,
    *,
    namespace: str | None = None,
    overload_retries: int = OVERLOAD_RETRIES,
) -> InClusterWorkspace:
    return InClusterWorkspace(workspace_id, token, namespace, overload_retries)
