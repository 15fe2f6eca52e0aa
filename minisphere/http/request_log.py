"""One structured log line per HTTP request, and the hook the metrics hang on. No Ray here.

`RequestLog` is a plain ASGI middleware around the API. For every request it emits, on the
`minisphere.requests` logger, one JSON object:

    {"event": "request", "requestId": "…", "workspace": "notes", "method": "recall",
     "httpMethod": "POST", "route": "workspace", "status": 200, "outcome": "ok",
     "latencyMs": 3.1}

- `method` is a label of the route that matched, taken only from the app's own route table:
  a contract method name, an admin action (`admin.create`, `admin.export`, …), a maintenance
  route (`maintenance.runs`) or a service route (`healthz`, `docs`, …). A path no route
  matches is `unknown`, so however many distinct paths callers send, the label set is
  bounded by the routes the app has (metrics use it as a tag);
- `workspace` only when the path names a syntactically valid workspace id;
- `outcome` is `ok` below 400, else the error `code` of the JSON error body (`not_found`,
  `unauthenticated`, …), else `http_<status>`;
- `requestId` is the caller's `X-Request-Id` (if it is a short token) or a new one; it is sent
  back in the `X-Request-Id` response header. Under Ray Serve the id is Serve's own request
  id (Serve takes the caller's header too, and sends the header itself).
Never logged: bodies (content, queries), query strings, headers (tokens).
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from typing_extensions import TypedDict

from minisphere.control.auth import WORKSPACE_ID_PATTERN

REQUEST_LOGGER = "minisphere.requests"
REQUEST_ID_HEADER = b"x-request-id"
ERROR_BODY_SNIFF_BYTES = 4096  # of an error response, to read its `code`
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_WORKSPACE = re.compile(WORKSPACE_ID_PATTERN)
# Admin routes on the collection and on one workspace are named by their HTTP method.
_COLLECTION_VERBS = {"POST": "create", "GET": "list"}
_ITEM_VERBS = {"GET": "get", "DELETE": "delete", "PUT": "update", "PATCH": "update"}
_SERVICE_ROUTES = {
    "/healthz": "healthz",
    "/v1/contracts": "contracts",
    "/docs": "docs",
    "/docs/oauth2-redirect": "docs",
    "/openapi.json": "openapi",
    "/redoc": "docs",
}
_TOKEN = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
_LABEL = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
UNKNOWN = "unknown"
_WORKSPACE_PARAMS = ("workspace", "workspace_id")
# a request's route kind, method label and workspace (None: the path names none)
Classified = dict[str, str | None]


class _Sent(TypedDict):
    """What a request's answer has sent so far: its status, the start of an error body."""

    status: int
    error: bytearray


def _valid_workspace(raw: object) -> str | None:
    return raw if isinstance(raw, str) and _WORKSPACE.fullmatch(raw) else None


def _literal(segment: str) -> bool:
    return not (segment.startswith("{") and segment.endswith("}"))


def _kind_of(parts: list[str]) -> str:
    if parts[:2] == ["v1", "w"]:
        return "workspace"
    if parts[:2] in (["v1", "workspaces"], ["v1", "maintenance"]):
        return "admin"
    return "service"


def route_label(route: BaseRoute) -> tuple[str, str]:
    """(route kind, label) of one route of the app, derived from its path template (and, for
    the workspace collection and items, its HTTP method)."""
    template = getattr(route, "path", "") or ""
    parts = template.strip("/").split("/")
    kind = _kind_of(parts)
    methods = sorted(getattr(route, "methods", None) or ())
    verb = next((m for m in methods if m != "HEAD"), "")
    if kind == "workspace":
        label = parts[3] if len(parts) == 4 and _literal(parts[3]) else getattr(route, "name", "")
    elif parts[:2] == ["v1", "workspaces"] and len(parts) == 2:
        label = "admin." + _COLLECTION_VERBS.get(verb, verb.lower())
    elif parts[:2] == ["v1", "workspaces"] and len(parts) == 3:
        label = "admin." + _ITEM_VERBS.get(verb, verb.lower())
    elif parts[:2] == ["v1", "workspaces"]:
        label = "admin." + ".".join(p for p in parts[3:] if _literal(p))
    elif template in _SERVICE_ROUTES:
        label = _SERVICE_ROUTES[template]
    elif parts[:1] == ["v1"]:
        label = ".".join(p for p in parts[1:] if _literal(p))
    else:
        label = getattr(route, "name", "") or ""
    return kind, (label if _LABEL.fullmatch(label) else UNKNOWN)


class RouteTable:
    """The app's routes (a live list: routes added later are seen) and their labels."""

    def __init__(self, routes: Sequence[BaseRoute]) -> None:
        self.routes = routes
        self._labels: dict[int, tuple[str, str]] = {}

    def _label(self, route: BaseRoute) -> tuple[str, str]:
        key = id(route)
        if key not in self._labels:
            self._labels[key] = route_label(route)
        return self._labels[key]

    def labels(self) -> set[str]:
        """Every label a request can get (besides `unknown`)."""
        return {self._label(route)[1] for route in self.routes}

    def of_matched(self, scope: Scope) -> Classified | None:
        """The same, from the route the router matched (FastAPI names it in the scope) when it
        is one of the table's: no second pass over every route's pattern."""
        route = scope.get("route")
        if route is None or not any(known is route for known in self.routes):
            return None
        found = self._found(route, scope)
        served = getattr(route, "methods", None)
        if served and scope.get("method") not in served:  # its path, not its method: a 405
            return dict(found, method=UNKNOWN)
        return found

    def classify(self, http_method: str, path: str, root_path: str = "") -> Classified:
        """(route kind, method label, workspace) of a request, from the route it matches."""
        scope: Scope = {"type": "http", "method": http_method, "path": path, "root_path": root_path}
        partial = None
        for route in self.routes:
            try:
                match, child = route.matches(scope)
            except Exception:  # noqa: BLE001 - a route that cannot judge does not match
                continue
            if match is Match.FULL:
                return self._found(route, child)
            if match is Match.PARTIAL and partial is None:  # path known, method not
                partial = (route, child)
        if partial is not None:  # a route's path with a method it does not serve
            return dict(self._found(*partial), method=UNKNOWN)
        parts = path.strip("/").split("/")
        workspace = (
            _valid_workspace(parts[2])
            if len(parts) >= 3 and parts[:2] in (["v1", "w"], ["v1", "workspaces"])
            else None
        )
        return {"route": _kind_of(parts), "method": UNKNOWN, "workspace": workspace}

    def _found(self, route: BaseRoute, child: Mapping[str, Any]) -> Classified:
        kind, label = self._label(route)
        params = child.get("path_params") or {}
        workspace = next(
            (_valid_workspace(params[name]) for name in _WORKSPACE_PARAMS if name in params), None
        )
        return {"route": kind, "method": label, "workspace": workspace}


def classify(http_method: str, path: str, routes: RouteTable | Sequence[BaseRoute]) -> Classified:
    """(route kind, method label, workspace) of a request to an app with these routes."""
    table = routes if isinstance(routes, RouteTable) else RouteTable(routes)
    return table.classify(http_method, path)


def outcome_of(status: int, error_body: bytes) -> str:
    if status < 400:
        return "ok"
    try:
        code = json.loads(error_body.decode("utf-8"))["error"]["code"]
        if isinstance(code, str) and _TOKEN.fullmatch(code):
            return code
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        pass
    return f"http_{status}"


def request_id_from(headers: list[tuple[bytes, bytes]]) -> str:
    for name, value in headers:
        if name.lower() == REQUEST_ID_HEADER:
            text = value.decode("latin-1")
            if _REQUEST_ID.fullmatch(text):
                return text
    return uuid.uuid4().hex


class RequestLog:
    """ASGI middleware: one JSON log line per request; `observe(record)` for metrics."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        logger: logging.Logger | None = None,
        observe: Callable[[dict[str, Any]], None] | None = None,
        request_id: Callable[[], str | None] | None = None,
        echo_header: bool = True,
        routes: Sequence[BaseRoute] | None = None,
        log_lines: bool = True,
    ) -> None:
        self.app = app
        # the labels come from these routes (the app's own list), else from scope["app"]
        self.table = RouteTable(routes) if routes is not None else None
        self.logger = logger or logging.getLogger(REQUEST_LOGGER)
        self.observe = observe
        self.request_id = request_id  # e.g. Ray Serve's own request id (same as its header)
        self.echo_header = echo_header  # False when the server already sends X-Request-Id
        # the metrics hook runs for every request; the log line only when asked for (under
        # Serve a line costs about a millisecond of the replica's CPU: bench/results/call-cost.md)
        self.log_lines = log_lines

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        request_id = (self.request_id() if self.request_id else None) or request_id_from(
            scope.get("headers") or []
        )
        state: _Sent = {"status": 500, "error": bytearray()}

        async def send_logged(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["status"] = message["status"]
                if self.echo_header:
                    message = dict(
                        message,
                        headers=[
                            *message.get("headers", []),
                            (REQUEST_ID_HEADER, request_id.encode()),
                        ],
                    )
            elif (
                message["type"] == "http.response.body"
                and state["status"] >= 400
                and len(state["error"]) < ERROR_BODY_SNIFF_BYTES
            ):
                state["error"] += message.get("body", b"")[:ERROR_BODY_SNIFF_BYTES]
            await send(message)

        try:
            await self.app(scope, receive, send_logged)
        finally:
            record: dict[str, Any] = {
                "event": "request",
                "requestId": request_id,
                **self.classify(scope),
                "httpMethod": scope.get("method", ""),
                "status": state["status"],
                "outcome": outcome_of(state["status"], bytes(state["error"])),
                "latencyMs": round((time.perf_counter() - started) * 1e3, 3),
            }
            self.emit(record)

    def classify(self, scope: Scope) -> Classified:
        http_method, path = scope.get("method", ""), scope.get("path", "")
        table = self.table
        if table is None:
            app = scope.get("app")
            table = self.table = RouteTable(getattr(app, "routes", None) or [])
        try:
            matched = table.of_matched(scope)
            return matched or table.classify(http_method, path, scope.get("root_path", ""))
        except Exception:  # noqa: BLE001 - observability must never fail a request
            return {"route": "service", "method": UNKNOWN, "workspace": None}

    def emit(self, record: dict[str, Any]) -> None:
        try:
            if self.log_lines:
                self.logger.info(json.dumps(record, separators=(",", ":"), sort_keys=True))
            if self.observe is not None:
                self.observe(record)
        except Exception:  # observability must never fail a request
            self.logger.debug("request log/metrics failed", exc_info=True)
