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
contract's camelCase. Errors raise `ServiceError(status, code, message)`.

Every write takes `idempotency_key=`: sent as the `Idempotency-Key` header, it makes the write
safe to send again after a timeout or a 503 -- a repeat with the same key is answered what the
first answered and writes nothing (the service keeps keys at least 24 hours).

A refusal with 503 and a `Retry-After` header is sent again a bounded number of times: when
its code says the call was not run (`overloaded`: the service is at capacity;
`no_workspace_slots`: no room to open the workspace), whatever the method; for another such 503
only when a resend is harmless (a read, or a write with an idempotency key). A harmless call
answered a 5xx that the service did not write (code `front_end_error`: Serve's proxy when the
ingress replica died mid-call, or a load balancer) is sent again too, after about a second.
Each wait is
Retry-After seconds times a random factor in `OVERLOAD_RETRY_JITTER` (0.5 to 1.5, so callers
refused together do not all come back at once), at most `overload_retry_max_wait_s=`
(`OVERLOAD_RETRY_MAX_WAIT_S`, 30 s); at most `overload_retries=` resends (`OVERLOAD_RETRIES`, 3;
0 turns it off). The last refusal raises `ServiceError` with the header's seconds in
`retry_after_s` (None when the answer had none). `OverloadRetry` is that policy, shared by the
sync and async clients and the in-cluster client (`actors/in_cluster.py`).
"""
from __future__ import annotations

import asyncio
import json
import math
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from pydantic.alias_generators import to_camel

from minisphere.client.models import (
    CaptureResult,
    CreatedWorkspace,
    Entry,
    RecallResult,
    WorkspaceInfo,
)

DEFAULT_URL = "http://127.0.0.1:8000"
IDEMPOTENCY_HEADER = "Idempotency-Key"
# The methods a workspace token may call, which `call_tool` dispatches (the tool definitions of
# `minisphere tools` are these; runStalenessPass is the scheduler's). The client cannot import
# the engine's method table, so tests/integrations keeps this set equal to it.
TOOL_METHODS = frozenset({
    "recall", "listRecent", "getEntry", "connections", "graphView", "getTags", "getCount",
    "getStats", "getBrief", "capture", "append", "update", "setStatus", "forget", "link",
    "unlink"})
# The workspace methods that only read: sending one again is harmless (tests/client keeps this
# set equal to the engine's read methods).
READ_METHODS = frozenset({
    "recall", "listRecent", "getEntry", "connections", "graphView", "getTags", "getCount",
    "getStats", "getBrief"})

OVERLOAD_RETRIES = 3                    # resends at most of a call refused with 503 + Retry-After
OVERLOAD_RETRY_MAX_WAIT_S = 30.0        # the longest single wait before such a resend
OVERLOAD_RETRY_JITTER = (0.5, 1.5)      # the wait is Retry-After times a factor uniform in this
UNAVAILABLE_STATUS = 503
# the 503 codes that say the call was not run, so any method may be sent again
NOT_RUN_CODES = frozenset({"overloaded", "no_workspace_slots"})
# A 5xx whose body is not the service's error: written by the HTTP front (Serve's proxy, whose
# ingress replica died mid-call with its node; a load balancer). The call may have run: only a
# safe one is sent again, after about this long.
FRONT_END_ERROR = "front_end_error"
FRONT_END_RETRY_S = 1.0

T = TypeVar("T")


class ServiceError(Exception):
    """A refusal: HTTP `status`, the service's `code` and `message`, and `retry_after_s`, the
    seconds its Retry-After header asked to wait before asking again (None: no header)."""

    def __init__(self, status: int, code: str, message: str,
                 retry_after_s: float | None = None):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message
        self.retry_after_s = retry_after_s


def _retry_after_s(response: httpx.Response) -> float | None:
    """Retry-After in seconds; None when absent or not a number of seconds (the HTTP-date form,
    which the service never sends)."""
    try:
        seconds = float(response.headers["Retry-After"])
    except (KeyError, ValueError):
        return None
    return seconds if 0 <= seconds < math.inf else None


def _check(response: httpx.Response) -> Any:
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code >= 400:
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict):
            code = FRONT_END_ERROR if response.status_code >= 500 else "http_error"
            error = {"code": code, "message": response.text[:200]}
        raise ServiceError(response.status_code, error.get("code", "http_error"),
                           error.get("message", response.text[:200]), _retry_after_s(response))
    return body


def jittered_wait_s(retry_after_s: float, max_wait_s: float,
                    uniform: Callable[[float, float], float] = random.uniform) -> float:
    """Retry-After times a factor drawn uniformly from OVERLOAD_RETRY_JITTER, at most
    `max_wait_s`: callers refused at the same moment come back spread out."""
    return min(retry_after_s * uniform(*OVERLOAD_RETRY_JITTER), max_wait_s)


def resend_is_safe(method: str, key: str | None) -> bool:
    """Sending the workspace call again cannot write twice: a read, or a keyed write."""
    return method in READ_METHODS or key is not None


@dataclass
class OverloadRetry:
    """When a refused call is sent again, and after how long: the one policy of the sync and
    async HTTP clients and of the in-cluster client. `retries`: resends at most (0: none);
    `max_wait_s`: the longest single wait; `sleep` / `async_sleep`: how `run` / `arun` wait."""
    retries: int = OVERLOAD_RETRIES
    max_wait_s: float = OVERLOAD_RETRY_MAX_WAIT_S
    sleep: Callable[[float], Any] = time.sleep
    async_sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep

    def __post_init__(self):
        if self.retries < 0 or not 0 <= self.max_wait_s < math.inf:
            raise ValueError("overload retries and their longest wait are finite and not negative")

    @staticmethod
    def resendable(error: ServiceError, safe: bool) -> bool:
        """A 503 with Retry-After whose code says the call was not run, or any such 503 when
        `safe` (a resend cannot write twice); or, when `safe`, a 5xx of the HTTP front."""
        if error.code == FRONT_END_ERROR:
            return safe
        if error.status != UNAVAILABLE_STATUS or error.retry_after_s is None:
            return False
        return safe or error.code in NOT_RUN_CODES

    def wait_s(self, error: ServiceError, resent: int, safe: bool) -> float:
        """Seconds to wait before sending again a call refused with `error` after `resent`
        resends; raises `error` when it is not to be sent again."""
        if resent >= self.retries or not self.resendable(error, safe):
            raise error
        waited = error.retry_after_s if error.retry_after_s is not None else FRONT_END_RETRY_S
        return jittered_wait_s(waited, self.max_wait_s)

    def run(self, send: Callable[[], T], safe: bool) -> T:
        """`send()`, which raises ServiceError when refused, sent again as `wait_s` says."""
        resent = 0
        while True:
            try:
                return send()
            except ServiceError as error:
                self.sleep(self.wait_s(error, resent, safe))
            resent += 1

    async def arun(self, send: Callable[[], Awaitable[T]], safe: bool) -> T:
        """`run` for a coroutine function."""
        resent = 0
        while True:
            try:
                return await send()
            except ServiceError as error:
                await self.async_sleep(self.wait_s(error, resent, safe))
            resent += 1


def _exchange(http: httpx.Client, retry: OverloadRetry, safe: bool, verb: str, url: str,
              **request) -> Any:
    """One HTTP call's checked answer, the call sent again as `retry` says."""
    return retry.run(lambda: _check(http.request(verb, url, **request)), safe)


async def _aexchange(http: httpx.AsyncClient, retry: OverloadRetry, safe: bool, verb: str,
                     url: str, **request) -> Any:
    async def send():
        return _check(await http.request(verb, url, **request))
    return await retry.arun(send, safe)


def _camel(options: dict) -> dict:
    return {to_camel(k): v for k, v in options.items() if v is not None}


def unparsed(body):
    """The `parse` of a call whose answer is returned as the service sent it."""
    return body


class WorkspaceCalls:
    """Every contract method once, over any transport: a subclass implements `_run` (sync or
    async) to send one call and return `parse` of its answer. `key`: the write's idempotency
    key (None: none sent). The HTTP clients below and `actors/in_cluster.py` are the
    subclasses."""
    workspace_id: str

    def _run(self, method: str, body: dict, parse: Callable = unparsed,
             key: str | None = None):  # pragma: no cover
        raise NotImplementedError

    def call(self, method: str, *, idempotency_key: str | None = None, **args):
        return self._run(method, _camel(args), key=idempotency_key)

    def call_tool(self, name: str, arguments: dict | str | None = None, *,
                  idempotency_key: str | None = None):
        """Send an LLM's tool call (`minisphere tools` defines the tools): `arguments` as the
        model gave them, a dict or JSON text (OpenAI sends text). The service validates them as
        any call; the answer is its JSON, ready to hand back to the model."""
        if name not in TOOL_METHODS:
            raise ValueError(f"no tool {name!r}; the tools are {', '.join(sorted(TOOL_METHODS))}")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError as exc:
                raise ValueError(f"{name}: arguments are not JSON: {exc}") from None
        if not isinstance(arguments, dict | None):
            raise ValueError(f"{name}: arguments must be a JSON object")
        return self._run(name, dict(arguments or {}), key=idempotency_key)

    def capture(self, content: str, *, idempotency_key: str | None = None, **options):
        return self._run("capture", {"content": content, **_camel(options)},
                         CaptureResult.model_validate, idempotency_key)

    def recall(self, query: str, **options):
        return self._run("recall", {"query": query, **_camel(options)},
                         RecallResult.model_validate)

    def get_entry(self, id: str):
        return self._run("getEntry", {"id": id}, Entry.model_validate)

    def append(self, id: str, addition: str, *, idempotency_key: str | None = None,
               **options):
        return self._run("append", {"id": id, "addition": addition, **_camel(options)},
                         Entry.model_validate, idempotency_key)

    def update(self, id: str, content: str, *, idempotency_key: str | None = None):
        return self._run("update", {"id": id, "content": content}, Entry.model_validate,
                         idempotency_key)

    def set_status(self, id: str, status: str, *, idempotency_key: str | None = None):
        return self._run("setStatus", {"id": id, "status": status}, Entry.model_validate,
                         idempotency_key)

    def forget(self, id: str, *, idempotency_key: str | None = None):
        return self._run("forget", {"id": id}, key=idempotency_key)

    def link(self, src: str, dst: str, type: str, *, idempotency_key: str | None = None,
             **options):
        return self._run("link", {"src": src, "dst": dst, "type": type, **_camel(options)},
                         key=idempotency_key)

    def unlink(self, src: str, dst: str, type: str, *, idempotency_key: str | None = None):
        return self._run("unlink", {"src": src, "dst": dst, "type": type},
                         key=idempotency_key)

    def list_recent(self, **options):
        return self._run("listRecent", _camel(options),
                         lambda b: [Entry.model_validate(e) for e in b["items"]])

    def connections(self, id: str):
        return self._run("connections", {"id": id})

    def graph_view(self, seed_ids: list[str], **options):
        return self._run("graphView", {"seedIds": seed_ids, **_camel(options)})

    def get_tags(self, **options):
        return self._run("getTags", _camel(options))

    def get_count(self):
        return self._run("getCount", {}, lambda b: b["count"])

    def get_stats(self):
        return self._run("getStats", {})

    def get_brief(self):
        return self._run("getBrief", {})

    def run_staleness_pass(self, limit: int | None = None):
        """None: the service's default limit."""
        return self._run("runStalenessPass", _camel({"limit": limit}))


def _call_headers(auth: str, key: str | None) -> dict:
    return {"Authorization": auth, **({IDEMPOTENCY_HEADER: key} if key is not None else {})}


class _HTTPWorkspace(WorkspaceCalls):
    """A workspace over HTTP; `overload_retry` None: the default policy."""

    def __init__(self, http, workspace_id: str, token: str,
                 overload_retry: OverloadRetry | None = None):
        self.http, self.workspace_id, self._auth = http, workspace_id, f"Bearer {token}"
        self.overload_retry = overload_retry if overload_retry is not None else OverloadRetry()

    def _request(self, method: str, body: dict, key: str | None) -> dict:
        """The arguments of `_exchange` / `_aexchange` for one call."""
        return dict(http=self.http, retry=self.overload_retry, safe=resend_is_safe(method, key),
                    verb="POST", url=f"/v1/w/{self.workspace_id}/{method}", json=body,
                    headers=_call_headers(self._auth, key))


class WorkspaceClient(_HTTPWorkspace):
    http: httpx.Client

    def _run(self, method, body, parse=unparsed, key=None):
        return parse(_exchange(**self._request(method, body, key)))


class AsyncWorkspaceClient(_HTTPWorkspace):
    http: httpx.AsyncClient

    async def _run(self, method, body, parse=unparsed, key=None):
        return parse(await _aexchange(**self._request(method, body, key)))


class _Admin:
    def _settings(self, base_url, admin_token, overload_retries, overload_retry_max_wait_s):
        self.base_url = base_url or os.environ.get("MINISPHERE_URL") or DEFAULT_URL
        self.admin_token = admin_token or os.environ.get("MINISPHERE_ADMIN_TOKEN", "")
        # the policy of this client's calls and of its workspaces' (replace it to wait otherwise)
        self.overload_retry = OverloadRetry(overload_retries, overload_retry_max_wait_s)

    def _admin_headers(self) -> dict:
        return {"Authorization": f"Bearer {self.admin_token}"}


class Client(_Admin):
    """The sync client. `overload_retries` / `overload_retry_max_wait_s`: how often, and after
    how long at most, a 503 with Retry-After is sent again (see the module docstring; 0 retries:
    never)."""

    def __init__(self, base_url: str | None = None, *, admin_token: str | None = None,
                 timeout: float = 30.0, transport: httpx.BaseTransport | None = None,
                 overload_retries: int = OVERLOAD_RETRIES,
                 overload_retry_max_wait_s: float = OVERLOAD_RETRY_MAX_WAIT_S):
        self._settings(base_url, admin_token, overload_retries, overload_retry_max_wait_s)
        self.http = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport)

    def _ask(self, verb: str, url: str, **request) -> Any:
        """A service route's checked answer; a GET is sent again as a read is."""
        return _exchange(self.http, self.overload_retry, verb == "GET", verb, url, **request)

    def close(self):
        self.http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def workspace(self, workspace_id: str, token: str | None = None) -> WorkspaceClient:
        return WorkspaceClient(self.http, workspace_id, token or self.admin_token,
                               self.overload_retry)

    def health(self) -> dict:
        return self._ask("GET", "/healthz")

    def contracts(self) -> dict:
        return self._ask("GET", "/v1/contracts")

    def create_workspace(self, workspace_id: str | None = None, *, blueprint: dict | None = None,
                         label: str | None = None) -> CreatedWorkspace:
        body = _camel({"id": workspace_id, "blueprint": blueprint, "label": label})
        return CreatedWorkspace.model_validate(self._ask(
            "POST", "/v1/workspaces", json=body, headers=self._admin_headers()))

    def list_workspaces(self, limit: int = 1000) -> list[WorkspaceInfo]:
        body = self._ask("GET", "/v1/workspaces", params={"limit": limit},
                         headers=self._admin_headers())
        return [WorkspaceInfo.model_validate(w) for w in body["items"]]

    def get_workspace(self, workspace_id: str) -> WorkspaceInfo:
        return WorkspaceInfo.model_validate(self._ask(
            "GET", f"/v1/workspaces/{workspace_id}", headers=self._admin_headers()))

    def delete_workspace(self, workspace_id: str) -> dict:
        return self._ask("DELETE", f"/v1/workspaces/{workspace_id}",
                         headers=self._admin_headers())

    def hibernate_workspace(self, workspace_id: str) -> dict:
        """Snapshot if changed, close, release its actor; answers once it is done (admin)."""
        return self._ask("POST", f"/v1/workspaces/{workspace_id}/hibernate",
                         headers=self._admin_headers())

    def create_token(self, workspace_id: str, scope: str = "write", *, label: str | None = None,
                     expires_in_s: int | None = None) -> dict:
        """Issue a token (`read`: read methods only; `write`: everything a tenant may do);
        the secret is in this answer only. Rotation: create the new one, move callers, revoke
        the old one."""
        body = _camel({"scope": scope, "label": label, "expires_in_s": expires_in_s})
        return self._ask("POST", f"/v1/workspaces/{workspace_id}/tokens", json=body,
                         headers=self._admin_headers())

    def list_tokens(self, workspace_id: str) -> list[dict]:
        return self._ask("GET", f"/v1/workspaces/{workspace_id}/tokens",
                         headers=self._admin_headers())["items"]

    def revoke_token(self, workspace_id: str, token_id: str) -> dict:
        """Revoke now: the very next request with it is refused."""
        return self._ask("DELETE", f"/v1/workspaces/{workspace_id}/tokens/{token_id}",
                         headers=self._admin_headers())

    def whoami(self, token: str | None = None) -> dict:
        """What a token is (default: the admin token this client holds)."""
        return self._ask("GET", "/v1/whoami", headers={
            "Authorization": f"Bearer {token or self.admin_token}"})

    def snapshot(self, workspace_id: str) -> dict:
        """Take a snapshot now; its manifest."""
        return self._ask("POST", f"/v1/workspaces/{workspace_id}/snapshot",
                         headers=self._admin_headers())

    def list_snapshots(self, workspace_id: str) -> list[dict]:
        return self._ask("GET", f"/v1/workspaces/{workspace_id}/snapshots",
                         headers=self._admin_headers())["items"]

    def restore(self, workspace_id: str, *, version: str | None = None,
                timestamp: str | None = None) -> dict:
        """Restore a snapshot `version`, or the state at `timestamp` (UTC, e.g.
        "2026-12-02T06:00:00Z"; needs continuous replication): exactly one of the two."""
        if (version is None) == (timestamp is None):
            raise ValueError("restore takes a version or a timestamp, not both or neither")
        if version is not None:
            return self._ask("POST", f"/v1/workspaces/{workspace_id}/restore",
                             json={"version": version}, headers=self._admin_headers())
        return self._ask("POST", f"/v1/workspaces/{workspace_id}/restore-to-moment",
                         json={"timestamp": timestamp}, headers=self._admin_headers())

    def prune_snapshots(self, workspace_id: str, keep: int = 1) -> dict:
        """Keep only the newest `keep` snapshot versions, the newest being the workspace as it
        is now (admin). After a forget, this drops the versions that still hold the text."""
        return self._ask("POST", f"/v1/workspaces/{workspace_id}/snapshots/prune",
                         json={"keep": keep}, headers=self._admin_headers())

    def rebind_vectors(self, workspace_id: str, provider: str, **spec) -> dict:
        """Move the workspace to another embedding provider (admin): its blueprint names it
        at once and every entry is re-embedded while it serves; `vector_binding` shows the
        progress. `spec`: the binding's other fields (model, dimensions, url, apiKeyEnv)."""
        return self._ask("POST", f"/v1/workspaces/{workspace_id}/vector-binding",
                         json={"provider": provider, **spec}, headers=self._admin_headers())

    def vector_binding(self, workspace_id: str) -> dict:
        """The binding the blueprint names, the file's own, and a rebind's progress."""
        return self._ask("GET", f"/v1/workspaces/{workspace_id}/vector-binding",
                         headers=self._admin_headers())

    def maintenance_runs(self, workspace_id: str | None = None, limit: int = 100) -> list[dict]:
        """Audited staleness runs (cron and manual), newest first (admin token)."""
        params = {"limit": limit, **({"workspace": workspace_id} if workspace_id else {})}
        return self._ask("GET", "/v1/maintenance/runs", params=params,
                         headers=self._admin_headers())["items"]


class AsyncClient(_Admin):
    """The async client: `Client`'s options, and `limits` for its connection pool."""

    def __init__(self, base_url: str | None = None, *, admin_token: str | None = None,
                 timeout: float = 30.0, transport: httpx.AsyncBaseTransport | None = None,
                 limits: httpx.Limits | None = None, overload_retries: int = OVERLOAD_RETRIES,
                 overload_retry_max_wait_s: float = OVERLOAD_RETRY_MAX_WAIT_S):
        self._settings(base_url, admin_token, overload_retries, overload_retry_max_wait_s)
        self.http = httpx.AsyncClient(base_url=self.base_url, timeout=timeout,
                                      transport=transport, limits=limits or httpx.Limits())

    async def _ask(self, verb: str, url: str, **request) -> Any:
        return await _aexchange(self.http, self.overload_retry, verb == "GET", verb, url,
                                **request)

    async def aclose(self):
        await self.http.aclose()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.aclose()

    def workspace(self, workspace_id: str, token: str | None = None) -> AsyncWorkspaceClient:
        return AsyncWorkspaceClient(self.http, workspace_id, token or self.admin_token,
                                    self.overload_retry)

    async def health(self) -> dict:
        return await self._ask("GET", "/healthz")

    async def create_workspace(self, workspace_id: str | None = None, *,
                               blueprint: dict | None = None,
                               label: str | None = None) -> CreatedWorkspace:
        body = _camel({"id": workspace_id, "blueprint": blueprint, "label": label})
        return CreatedWorkspace.model_validate(await self._ask(
            "POST", "/v1/workspaces", json=body, headers=self._admin_headers()))

    async def list_workspaces(self, limit: int = 1000) -> list[WorkspaceInfo]:
        body = await self._ask("GET", "/v1/workspaces", params={"limit": limit},
                               headers=self._admin_headers())
        return [WorkspaceInfo.model_validate(w) for w in body["items"]]

    async def delete_workspace(self, workspace_id: str) -> dict:
        return await self._ask("DELETE", f"/v1/workspaces/{workspace_id}",
                               headers=self._admin_headers())

    async def hibernate_workspace(self, workspace_id: str) -> dict:
        return await self._ask("POST", f"/v1/workspaces/{workspace_id}/hibernate",
                               headers=self._admin_headers())

    async def create_token(self, workspace_id: str, scope: str = "write", *,
                           label: str | None = None, expires_in_s: int | None = None) -> dict:
        body = _camel({"scope": scope, "label": label, "expires_in_s": expires_in_s})
        return await self._ask("POST", f"/v1/workspaces/{workspace_id}/tokens", json=body,
                               headers=self._admin_headers())

    async def list_tokens(self, workspace_id: str) -> list[dict]:
        return (await self._ask("GET", f"/v1/workspaces/{workspace_id}/tokens",
                                headers=self._admin_headers()))["items"]

    async def revoke_token(self, workspace_id: str, token_id: str) -> dict:
        return await self._ask("DELETE", f"/v1/workspaces/{workspace_id}/tokens/{token_id}",
                               headers=self._admin_headers())
