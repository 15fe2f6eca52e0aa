"""One structured log line per HTTP request, and the hook the metrics hang on. No Ray here.

`RequestLog` is a plain ASGI middleware around the API. For every request it emits, on the
`minisphere.requests` logger, one JSON object:

    {"event": "request", "requestId": "…", "workspace": "notes", "method": "recall",
     "httpMethod": "POST", "route": "workspace", "status": 200, "outcome": "ok",
     "latencyMs": 3.1}

- `method` is a contract method name, an admin action (`admin.create`, `admin.export`, …) or
  the service route (`healthz`, `docs`, …); anything else is `unknown` (bounded label set);
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
from collections.abc import Callable

from minisphere.control.auth import WORKSPACE_ID_PATTERN
from minisphere.engine.methods import METHODS

REQUEST_LOGGER = "minisphere.requests"
REQUEST_ID_HEADER = b"x-request-id"
ERROR_BODY_SNIFF_BYTES = 4096          # of an error response, to read its `code`
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_WORKSPACE = re.compile(WORKSPACE_ID_PATTERN)
_ADMIN_ACTIONS = {("POST", ""): "admin.create", ("GET", ""): "admin.list",
                  ("GET", "id"): "admin.get", ("DELETE", "id"): "admin.delete"}
_SERVICE_ROUTES = {"/healthz": "healthz", "/v1/contracts": "contracts", "/docs": "docs",
                   "/openapi.json": "openapi", "/redoc": "docs"}
_TOKEN = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")


def _valid_workspace(raw: str) -> str | None:
    return raw if _WORKSPACE.fullmatch(raw) else None


def classify(http_method: str, path: str) -> dict:
    """(route kind, contract/admin method, workspace) from the path alone."""
    parts = path.strip("/").split("/")
    if len(parts) == 4 and parts[:2] == ["v1", "w"]:
        method = parts[3] if parts[3] in METHODS else "unknown"
        return {"route": "workspace", "method": method, "workspace": _valid_workspace(parts[2])}
    if len(parts) >= 2 and parts[:2] == ["v1", "workspaces"]:
        workspace = _valid_workspace(parts[2]) if len(parts) >= 3 else None
        if len(parts) == 4 and _TOKEN.fullmatch(parts[3]):
            action = f"admin.{parts[3]}"
        else:
            action = _ADMIN_ACTIONS.get((http_method, "id" if len(parts) == 3 else ""),
                                        "unknown") if len(parts) <= 3 else "unknown"
        return {"route": "admin", "method": action, "workspace": workspace}
    return {"route": "service", "method": _SERVICE_ROUTES.get(path, "unknown"),
            "workspace": None}


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

    def __init__(self, app, *, logger: logging.Logger | None = None,
                 observe: Callable[[dict], None] | None = None,
                 request_id: Callable[[], str | None] | None = None, echo_header: bool = True):
        self.app = app
        self.logger = logger or logging.getLogger(REQUEST_LOGGER)
        self.observe = observe
        self.request_id = request_id      # e.g. Ray Serve's own request id (same as its header)
        self.echo_header = echo_header    # False when the server already sends X-Request-Id

    async def __call__(self, scope, receive, send):
        if scope.get("type") != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        request_id = (self.request_id() if self.request_id else None) or \
            request_id_from(scope.get("headers") or [])
        state = {"status": 500, "error": bytearray()}

        async def send_logged(message):
            if message["type"] == "http.response.start":
                state["status"] = message["status"]
                if self.echo_header:
                    message = dict(message, headers=[*message.get("headers", []),
                                                      (REQUEST_ID_HEADER, request_id.encode())])
            elif (message["type"] == "http.response.body" and state["status"] >= 400
                  and len(state["error"]) < ERROR_BODY_SNIFF_BYTES):
                state["error"] += message.get("body", b"")[:ERROR_BODY_SNIFF_BYTES]
            await send(message)

        try:
            await self.app(scope, receive, send_logged)
        finally:
            record = {"event": "request", "requestId": request_id,
                      **classify(scope.get("method", ""), scope.get("path", "")),
                      "httpMethod": scope.get("method", ""), "status": state["status"],
                      "outcome": outcome_of(state["status"], bytes(state["error"])),
                      "latencyMs": round((time.perf_counter() - started) * 1e3, 3)}
            self.emit(record)

    def emit(self, record: dict) -> None:
        try:
            self.logger.info(json.dumps(record, separators=(",", ":"), sort_keys=True))
            if self.observe is not None:
                self.observe(record)
        except Exception:  # noqa: BLE001 - observability must never fail a request
            self.logger.debug("request log/metrics failed", exc_info=True)
