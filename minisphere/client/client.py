"""Typed Python client for the Mini-Sphere HTTP service (sync and async, httpx + pydantic).

    from minisphere.client import Client
    admin = Client("http://127.0.0.1:8000", admin_token="...")
    created = admin.create_workspace("notes")            # the token is shown only here
    ws = admin.workspace("notes", created.token)
    ws.capture("Postgres is the system of record", tags=["db"], kind="semantic")
    ws.recall("system of record", top_k=5)

    async with AsyncClient(url, admin_token=...) as admin:
        ws = admin.workspace("notes", token)
        await ws.capture("...")

Options are given in snake_case (`top_k=5`, `claim_tag="VERIFIED"`) and sent in the
contract's camelCase. Errors raise `ServiceError(status, code, message)`. Every write takes
`idempotency_key=`, and a call refused for overload is sent again a bounded number of times:
`minisphere.client.exchange` says when.
"""

from __future__ import annotations

import os
from typing import Any, Self

import httpx

from minisphere.client.exchange import (
    OVERLOAD_RETRIES,
    OVERLOAD_RETRY_MAX_WAIT_S,
    OverloadRetry,
    aexchange,
    exchange,
)
from minisphere.client.models import CreatedWorkspace, WorkspaceInfo
from minisphere.client.workspace import AsyncWorkspaceClient, WorkspaceClient, camel_options
from minisphere.wire.records import MaintenanceRun, TokenInfo, TokenIssued

DEFAULT_URL = "http://127.0.0.1:8000"


class _Admin:
    def _settings(
        self,
        base_url: str | None,
        admin_token: str | None,
        overload_retries: int,
        overload_retry_max_wait_s: float,
    ) -> None:
        self.base_url = base_url or os.environ.get("MINISPHERE_URL") or DEFAULT_URL
        self.admin_token = admin_token or os.environ.get("MINISPHERE_ADMIN_TOKEN", "")
        # the policy of this client's calls and of its workspaces' (replace it to wait otherwise)
        self.overload_retry = OverloadRetry(overload_retries, overload_retry_max_wait_s)

    def _admin_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}"}


class Client(_Admin):
    """The sync client. `overload_retries` / `overload_retry_max_wait_s`: how often, and after
    how long at most, a 503 with Retry-After is sent again (see the module docstring; 0 retries:
    never)."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        admin_token: str | None = None,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        overload_retries: int = OVERLOAD_RETRIES,
        overload_retry_max_wait_s: float = OVERLOAD_RETRY_MAX_WAIT_S,
    ) -> None:
        self._settings(base_url, admin_token, overload_retries, overload_retry_max_wait_s)
        self.http = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport)

    def _ask(self, verb: str, url: str, **request: Any) -> Any:
        """A service route's checked answer; a GET is sent again as a read is."""
        return exchange(self.http, self.overload_retry, verb == "GET", verb, url, **request)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def workspace(self, workspace_id: str, token: str | None = None) -> WorkspaceClient:
        return WorkspaceClient(
            self.http, workspace_id, token or self.admin_token, self.overload_retry
        )

    def health(self) -> dict[str, Any]:
        answer: dict[str, Any] = self._ask("GET", "/healthz")
        return answer

    def contracts(self) -> dict[str, Any]:
        answer: dict[str, Any] = self._ask("GET", "/v1/contracts")
        return answer

    def create_workspace(
        self,
        workspace_id: str | None = None,
        *,
        blueprint: dict[str, Any] | None = None,
        label: str | None = None,
    ) -> CreatedWorkspace:
        body = camel_options({"id": workspace_id, "blueprint": blueprint, "label": label})
        return CreatedWorkspace.model_validate(
            self._ask("POST", "/v1/workspaces", json=body, headers=self._admin_headers())
        )

    def list_workspaces(self, limit: int = 1000) -> list[WorkspaceInfo]:
        body = self._ask(
            "GET", "/v1/workspaces", params={"limit": limit}, headers=self._admin_headers()
        )
        return [WorkspaceInfo.model_validate(w) for w in body["items"]]

    def get_workspace(self, workspace_id: str) -> WorkspaceInfo:
        return WorkspaceInfo.model_validate(
            self._ask("GET", f"/v1/workspaces/{workspace_id}", headers=self._admin_headers())
        )

    def delete_workspace(self, workspace_id: str) -> dict[str, Any]:
        answer: dict[str, Any] = self._ask(
            "DELETE", f"/v1/workspaces/{workspace_id}", headers=self._admin_headers()
        )
        return answer

    def hibernate_workspace(self, workspace_id: str) -> dict[str, Any]:
        """Snapshot if changed, close, release its actor; answers once it is done (admin)."""
        answer: dict[str, Any] = self._ask(
            "POST", f"/v1/workspaces/{workspace_id}/hibernate", headers=self._admin_headers()
        )
        return answer

    def create_token(
        self,
        workspace_id: str,
        scope: str = "write",
        *,
        label: str | None = None,
        expires_in_s: int | None = None,
    ) -> TokenIssued:
        """Issue a token (`read`: read methods only; `write`: everything a tenant may do);
        the secret is in this answer only. Rotation: create the new one, move callers, revoke
        the old one."""
        body = camel_options({"scope": scope, "label": label, "expires_in_s": expires_in_s})
        answer: TokenIssued = self._ask(
            "POST",
            f"/v1/workspaces/{workspace_id}/tokens",
            json=body,
            headers=self._admin_headers(),
        )
        return answer

    def list_tokens(self, workspace_id: str) -> list[TokenInfo]:
        items: list[TokenInfo] = self._ask(
            "GET", f"/v1/workspaces/{workspace_id}/tokens", headers=self._admin_headers()
        )["items"]
        return items

    def revoke_token(self, workspace_id: str, token_id: str) -> dict[str, Any]:
        """Revoke now: the very next request with it is refused."""
        answer: dict[str, Any] = self._ask(
            "DELETE",
            f"/v1/workspaces/{workspace_id}/tokens/{token_id}",
            headers=self._admin_headers(),
        )
        return answer

    def whoami(self, token: str | None = None) -> dict[str, Any]:
        """What a token is (default: the admin token this client holds)."""
        answer: dict[str, Any] = self._ask(
            "GET", "/v1/whoami", headers={"Authorization": f"Bearer {token or self.admin_token}"}
        )
        return answer

    def snapshot(self, workspace_id: str) -> dict[str, Any]:
        """Take a snapshot now; its manifest."""
        answer: dict[str, Any] = self._ask(
            "POST", f"/v1/workspaces/{workspace_id}/snapshot", headers=self._admin_headers()
        )
        return answer

    def list_snapshots(self, workspace_id: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self._ask(
            "GET", f"/v1/workspaces/{workspace_id}/snapshots", headers=self._admin_headers()
        )["items"]
        return items

    def restore(
        self, workspace_id: str, *, version: str | None = None, timestamp: str | None = None
    ) -> dict[str, Any]:
        """Restore a snapshot `version`, or the state at `timestamp` (UTC, e.g.
        "2026-12-02T06:00:00Z"; needs continuous replication): exactly one of the two."""
        if (version is None) == (timestamp is None):
            raise ValueError("restore takes a version or a timestamp, not both or neither")
        answer: dict[str, Any]
        if version is not None:
            answer = self._ask(
                "POST",
                f"/v1/workspaces/{workspace_id}/restore",
                json={"version": version},
                headers=self._admin_headers(),
            )
            return answer
        answer = self._ask(
            "POST",
            f"/v1/workspaces/{workspace_id}/restore-to-moment",
            json={"timestamp": timestamp},
            headers=self._admin_headers(),
        )
        return answer

    def prune_snapshots(self, workspace_id: str, keep: int = 1) -> dict[str, Any]:
        """Keep only the newest `keep` snapshot versions, the newest being the workspace as it
        is now (admin). After a forget, this drops the versions that still hold the text."""
        answer: dict[str, Any] = self._ask(
            "POST",
            f"/v1/workspaces/{workspace_id}/snapshots/prune",
            json={"keep": keep},
            headers=self._admin_headers(),
        )
        return answer

    def rebind_vectors(self, workspace_id: str, provider: str, **spec: Any) -> dict[str, Any]:
        """Move the workspace to another embedding provider (admin): its blueprint names it
        at once and every entry is re-embedded while it serves; `vector_binding` shows the
        progress. `spec`: the binding's other fields (model, dimensions, url, apiKeyEnv)."""
        answer: dict[str, Any] = self._ask(
            "POST",
            f"/v1/workspaces/{workspace_id}/vector-binding",
            json={"provider": provider, **spec},
            headers=self._admin_headers(),
        )
        return answer

    def vector_binding(self, workspace_id: str) -> dict[str, Any]:
        """The binding the blueprint names, the file's own, and a rebind's progress."""
        answer: dict[str, Any] = self._ask(
            "GET", f"/v1/workspaces/{workspace_id}/vector-binding", headers=self._admin_headers()
        )
        return answer

    def maintenance_runs(
        self, workspace_id: str | None = None, limit: int = 100
    ) -> list[MaintenanceRun]:
        """Audited staleness runs (cron and manual), newest first (admin token)."""
        params = {"limit": limit, **({"workspace": workspace_id} if workspace_id else {})}
        items: list[MaintenanceRun] = self._ask(
            "GET", "/v1/maintenance/runs", params=params, headers=self._admin_headers()
        )["items"]
        return items


class AsyncClient(_Admin):
    """The async client: `Client`'s options, and `limits` for its connection pool."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        admin_token: str | None = None,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        limits: httpx.Limits | None = None,
        overload_retries: int = OVERLOAD_RETRIES,
        overload_retry_max_wait_s: float = OVERLOAD_RETRY_MAX_WAIT_S,
    ) -> None:
        self._settings(base_url, admin_token, overload_retries, overload_retry_max_wait_s)
        self.http = httpx.AsyncClient(
            base_url=self.base_url,
            timeout=timeout,
            transport=transport,
            limits=limits or httpx.Limits(),
        )

    async def _ask(self, verb: str, url: str, **request: Any) -> Any:
        return await aexchange(self.http, self.overload_retry, verb == "GET", verb, url, **request)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def workspace(self, workspace_id: str, token: str | None = None) -> AsyncWorkspaceClient:
        return AsyncWorkspaceClient(
            self.http, workspace_id, token or self.admin_token, self.overload_retry
        )

    async def health(self) -> dict[str, Any]:
        answer: dict[str, Any] = await self._ask("GET", "/healthz")
        return answer

    async def create_workspace(
        self,
        workspace_id: str | None = None,
        *,
        blueprint: dict[str, Any] | None = None,
        label: str | None = None,
    ) -> CreatedWorkspace:
        body = camel_options({"id": workspace_id, "blueprint": blueprint, "label": label})
        return CreatedWorkspace.model_validate(
            await self._ask("POST", "/v1/workspaces", json=body, headers=self._admin_headers())
        )

    async def list_workspaces(self, limit: int = 1000) -> list[WorkspaceInfo]:
        body = await self._ask(
            "GET", "/v1/workspaces", params={"limit": limit}, headers=self._admin_headers()
        )
        return [WorkspaceInfo.model_validate(w) for w in body["items"]]

    async def delete_workspace(self, workspace_id: str) -> dict[str, Any]:
        answer: dict[str, Any] = await self._ask(
            "DELETE", f"/v1/workspaces/{workspace_id}", headers=self._admin_headers()
        )
        return answer

    async def hibernate_workspace(self, workspace_id: str) -> dict[str, Any]:
        answer: dict[str, Any] = await self._ask(
            "POST", f"/v1/workspaces/{workspace_id}/hibernate", headers=self._admin_headers()
        )
        return answer

    async def create_token(
        self,
        workspace_id: str,
        scope: str = "write",
        *,
        label: str | None = None,
        expires_in_s: int | None = None,
    ) -> TokenIssued:
        body = camel_options({"scope": scope, "label": label, "expires_in_s": expires_in_s})
        answer: TokenIssued = await self._ask(
            "POST",
            f"/v1/workspaces/{workspace_id}/tokens",
            json=body,
            headers=self._admin_headers(),
        )
        return answer

    async def list_tokens(self, workspace_id: str) -> list[TokenInfo]:
        items: list[TokenInfo] = (
            await self._ask(
                "GET", f"/v1/workspaces/{workspace_id}/tokens", headers=self._admin_headers()
            )
        )["items"]
        return items

    async def revoke_token(self, workspace_id: str, token_id: str) -> dict[str, Any]:
        answer: dict[str, Any] = await self._ask(
            "DELETE",
            f"/v1/workspaces/{workspace_id}/tokens/{token_id}",
            headers=self._admin_headers(),
        )
        return answer
