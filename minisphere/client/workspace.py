"""A workspace's calls, every contract method once, over HTTP (`WorkspaceClient`,
`AsyncWorkspaceClient`) or any other transport (`WorkspaceCalls`). Options are given in
snake_case and sent in the contract's camelCase; a write's `idempotency_key=` is sent as the
`Idempotency-Key` header."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
from pydantic.alias_generators import to_camel

from minisphere.client.exchange import (
    READ_METHODS,
    OverloadRetry,
    aexchange,
    exchange,
    resend_is_safe,
)
from minisphere.client.models import CaptureResult, Entry, RecallResult

IDEMPOTENCY_HEADER = "Idempotency-Key"
# The methods a workspace token may call, which `call_tool` dispatches (the tool definitions of
# `minisphere tools` are these; runStalenessPass is the scheduler's). The client cannot import
# the engine's method table, so tests/integrations keeps this set equal to it.
TOOL_METHODS = READ_METHODS | frozenset(
    {
        "capture",
        "append",
        "update",
        "setStatus",
        "forget",
        "link",
        "unlink",
    }
)


def camel_options(options: dict[str, Any]) -> dict[str, Any]:
    return {to_camel(k): v for k, v in options.items() if v is not None}


def unparsed(body: Any) -> Any:
    """The `parse` of a call whose answer is returned as the service sent it."""
    return body


class WorkspaceCalls:
    """Every contract method once, over any transport: a subclass implements `_run` (sync or
    async) to send one call and return `parse` of its answer. `key`: the write's idempotency
    key (None: none sent). The HTTP clients below and `actors/in_cluster.py` are the
    subclasses.

    The methods answer what `_run` answers: the parsed answer from a sync `_run`, an awaitable
    of it from an async one. Python's types cannot say "`_run`'s kind of answer, of this model"
    (it has no higher-kinded types), so they are typed `Any`; the model each one parses into
    is the one it names."""

    workspace_id: str

    def _run(
        self,
        method: str,
        body: dict[str, Any],
        parse: Callable[[Any], Any] = unparsed,
        key: str | None = None,
    ) -> Any:  # pragma: no cover
        raise NotImplementedError

    def call(self, method: str, *, idempotency_key: str | None = None, **args: Any) -> Any:
        return self._run(method, camel_options(args), key=idempotency_key)

    def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> Any:
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

    def capture(self, content: str, *, idempotency_key: str | None = None, **options: Any) -> Any:
        return self._run(
            "capture",
            {"content": content, **camel_options(options)},
            CaptureResult.model_validate,
            idempotency_key,
        )

    def recall(self, query: str, **options: Any) -> Any:
        return self._run(
            "recall", {"query": query, **camel_options(options)}, RecallResult.model_validate
        )

    def get_entry(self, id: str, **options: Any) -> Any:
        """One entry; `as_of` (an RFC 3339 date-time) answers it as it stood then."""
        return self._run("getEntry", {"id": id, **camel_options(options)}, Entry.model_validate)

    def append(
        self, id: str, addition: str, *, idempotency_key: str | None = None, **options: Any
    ) -> Any:
        return self._run(
            "append",
            {"id": id, "addition": addition, **camel_options(options)},
            Entry.model_validate,
            idempotency_key,
        )

    def update(self, id: str, content: str, *, idempotency_key: str | None = None) -> Any:
        return self._run(
            "update", {"id": id, "content": content}, Entry.model_validate, idempotency_key
        )

    def set_status(self, id: str, status: str, *, idempotency_key: str | None = None) -> Any:
        return self._run(
            "setStatus", {"id": id, "status": status}, Entry.model_validate, idempotency_key
        )

    def forget(self, id: str, *, idempotency_key: str | None = None) -> Any:
        return self._run("forget", {"id": id}, key=idempotency_key)

    def link(
        self, src: str, dst: str, type: str, *, idempotency_key: str | None = None, **options: Any
    ) -> Any:
        return self._run(
            "link",
            {"src": src, "dst": dst, "type": type, **camel_options(options)},
            key=idempotency_key,
        )

    def unlink(self, src: str, dst: str, type: str, *, idempotency_key: str | None = None) -> Any:
        return self._run("unlink", {"src": src, "dst": dst, "type": type}, key=idempotency_key)

    def list_recent(self, **options: Any) -> Any:
        return self._run(
            "listRecent",
            camel_options(options),
            lambda b: [Entry.model_validate(e) for e in b["items"]],
        )

    def connections(self, id: str) -> Any:
        return self._run("connections", {"id": id})

    def graph_view(self, seed_ids: list[str], **options: Any) -> Any:
        return self._run("graphView", {"seedIds": seed_ids, **camel_options(options)})

    def get_tags(self, **options: Any) -> Any:
        return self._run("getTags", camel_options(options))

    def get_count(self) -> Any:
        return self._run("getCount", {}, lambda b: b["count"])

    def get_stats(self) -> Any:
        return self._run("getStats", {})

    def get_brief(self) -> Any:
        return self._run("getBrief", {})

    def run_staleness_pass(self, limit: int | None = None) -> Any:
        """None: the service's default limit."""
        return self._run("runStalenessPass", camel_options({"limit": limit}))


def call_headers(auth: str, key: str | None) -> dict[str, str]:
    return {"Authorization": auth, **({IDEMPOTENCY_HEADER: key} if key is not None else {})}


class _HTTPWorkspace(WorkspaceCalls):
    """A workspace over HTTP; `overload_retry` None: the default policy."""

    http: httpx.Client | httpx.AsyncClient

    def __init__(
        self,
        http: httpx.Client | httpx.AsyncClient,
        workspace_id: str,
        token: str,
        overload_retry: OverloadRetry | None = None,
    ) -> None:
        self.http, self.workspace_id, self._auth = http, workspace_id, f"Bearer {token}"
        self.overload_retry = overload_retry if overload_retry is not None else OverloadRetry()

    def _request(self, method: str, body: dict[str, Any], key: str | None) -> dict[str, Any]:
        """The arguments of `exchange` / `aexchange` for one call."""
        return dict(
            http=self.http,
            retry=self.overload_retry,
            safe=resend_is_safe(method, key),
            verb="POST",
            url=f"/v1/w/{self.workspace_id}/{method}",
            json=body,
            headers=call_headers(self._auth, key),
        )


class WorkspaceClient(_HTTPWorkspace):
    http: httpx.Client

    def _run(
        self,
        method: str,
        body: dict[str, Any],
        parse: Callable[[Any], Any] = unparsed,
        key: str | None = None,
    ) -> Any:
        return parse(exchange(**self._request(method, body, key)))


class AsyncWorkspaceClient(_HTTPWorkspace):
    http: httpx.AsyncClient

    async def _run(
        self,
        method: str,
        body: dict[str, Any],
        parse: Callable[[Any], Any] = unparsed,
        key: str | None = None,
    ) -> Any:
        return parse(await aexchange(**self._request(method, body, key)))
