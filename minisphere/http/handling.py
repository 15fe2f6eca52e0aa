"""Reading requests and writing answers, shared by every route: bounded bodies, strict JSON,
strict query numbers, request bodies as models, the error body of any failure (for the caller's
audience), and the timing headers."""

from __future__ import annotations

import functools
import ipaddress
import json
import math
import re
from collections.abc import Iterable
from typing import Any, NoReturn, TypeVar

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError

from minisphere.engine.idempotency import IDEMPOTENCY_KEEP_MS, KEY_PATTERN, check_key
from minisphere.engine.methods import describe_validation_error
from minisphere.errors import ADMIN, TENANT, MalformedRequest, MiniSphereError, RequestTooLarge
from minisphere.http.gateway_protocol import WorkspaceGateway
from minisphere.http.statuses import error_response
from minisphere.wire.timings import CallTimings, TimedPart

MAX_BODY_BYTES = 1024 * 1024
# Deeper JSON is refused before it reaches a model, an actor call or the engine: Python's own
# JSON encoder and decoder, pickling for Ray and pydantic all recurse once per level, so a
# body nested a few hundred levels deep fails somewhere far from the request (as a 500) instead
# of here. No argument of any route needs more than a handful of levels.
MAX_JSON_NESTING_LEVELS = 64
# Query numbers are ASCII digits only: str.isdigit() also accepts '²' or '٣', which int()
# refuses or reads differently. Nine digits are enough for every limit and line number.
_QUERY_INTEGER = re.compile(r"[0-9]{1,9}")
_CONTENT_LENGTH = re.compile(r"[0-9]{1,19}")
IDEMPOTENCY_HEADER = "Idempotency-Key"  # on a write: applied at most once per key
REPLAY_HEADER = "Idempotent-Replay"  # "true": answered from the key's stored result
UNAVAILABLE_RETRY_AFTER_S = 1  # a 503 of no known wait (a process restarting, a replica behind)
# An idempotency key as the RPC routes' header and the MCP tools' argument publish it
IDEMPOTENCY_KEY_SCHEMA = {
    "type": "string",
    "minLength": 1,
    "maxLength": 200,
    "pattern": KEY_PATTERN.pattern,
}
IDEMPOTENCY_KEY_PROMISE = (
    "Makes the write safe to send again: a repeat with the same key within "
    f"{IDEMPOTENCY_KEEP_MS // 3_600_000} hours is answered what the first was answered and "
    "writes nothing"
)
# Server-Timing parts, in order: (name in the header, key in the timings the actors report)
TIMING_PARTS: tuple[tuple[str, TimedPart], ...] = (
    ("auth", "auth_ms"),
    ("activate", "activate_ms"),
    ("prepare", "prepare_ms"),
    ("queue", "queue_ms"),
    ("engine", "engine_ms"),
    ("actor", "actor_ms"),
    ("rpc", "rpc_ms"),
)
# A part with no duration: the recall used the query vector the ingress started
QUERY_AHEAD_PART = "query-ahead"
# The token check is shown when it took any time (it asked the directory); from the replica's
# cache it takes microseconds.
AUTH_SHOWN_MS = 0.1
# a body's model, as `read_spec` answers it
Spec = TypeVar("Spec", bound=BaseModel)
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def query_integer(raw: str, name: str, low: int, high: int) -> int:
    """A query parameter as an integer in [low, high], or MalformedRequest naming the range."""
    if not isinstance(raw, str) or not _QUERY_INTEGER.fullmatch(raw) or not low <= int(raw) <= high:
        raise MalformedRequest(f"{name} must be an integer from {low} to {high}")
    return int(raw)


def _too_large(limit_bytes: int, hint: str, size: int | None = None) -> RequestTooLarge:
    said = (
        f"request body is {size} bytes"
        if size is not None
        else f"request body is larger than {limit_bytes} bytes"
    )
    return RequestTooLarge(f"{said}; the limit is {limit_bytes}" + (f"; {hint}" if hint else ""))


async def read_body(request: Request, limit_bytes: int = MAX_BODY_BYTES, hint: str = "") -> bytes:
    """The raw body, refused (413) past `limit_bytes`: at once when the declared length is too
    large, else as soon as the bytes received pass the limit. The stream is read chunk by chunk
    (a chunked upload declares no length), so an oversized body is never held whole."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not _CONTENT_LENGTH.fullmatch(declared.strip()):
            raise MalformedRequest("Content-Length must be a number of bytes")
        if int(declared) > limit_bytes:
            raise _too_large(limit_bytes, hint, int(declared))
    chunks: list[bytes] = []
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit_bytes:
            raise _too_large(limit_bytes, hint)
        chunks.append(chunk)
    return b"".join(chunks)


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def nesting_levels_exceed(value: Any, levels: int = MAX_JSON_NESTING_LEVELS) -> bool:
    """True when `value` (parsed JSON) nests objects/arrays deeper than `levels`. Iterative, so
    it cannot itself run out of stack."""
    pending = [(value, 1)] if isinstance(value, dict | list) else []
    while pending:
        node, depth = pending.pop()
        if depth > levels:
            return True
        children = node.values() if isinstance(node, dict) else node
        pending.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


# A JSON escape of a UTF-16 surrogate (\ud800-\udfff). A valid pair is joined into one code point
# by the parser; a lone one stays in the parsed text, which no UTF-8 encoder (SQLite's, the
# idempotency digest's) accepts. Only a body with such an escape is searched for one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE_ESCAPE_BYTES = re.compile(_SURROGATE_ESCAPE.pattern.encode())


def _holds_unencodable_text(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(
            _holds_unencodable_text(k) or _holds_unencodable_text(v) for k, v in value.items()
        )
    if isinstance(value, list):
        return any(_holds_unencodable_text(item) for item in value)
    return False


def refuse_unencodable_text(raw: bytes | str, value: Any, what: str = "request body") -> None:
    """MalformedRequest when the parsed `value` of `raw` holds a lone surrogate: refused at the
    edge, so no method (keyed or not) fails on it later, inside a batch of other writes."""
    escaped = (
        _SURROGATE_ESCAPE_BYTES.search(raw)
        if isinstance(raw, bytes)
        else _SURROGATE_ESCAPE.search(raw)
    )
    if escaped and _holds_unencodable_text(value):
        raise MalformedRequest(
            f"{what} holds text that is not valid Unicode (a lone UTF-16 "
            "surrogate escape such as \\ud800): send UTF-8 text"
        )


def parse_json(raw: bytes | str, what: str = "request body") -> Any:
    """Strict JSON (no NaN/Infinity, at most MAX_JSON_NESTING_LEVELS levels); every failure,
    including a nesting deep enough to exhaust the parser's stack, is MalformedRequest."""
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except RecursionError:  # not a ValueError: the parser ran out of stack
        value, deep = None, True
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise MalformedRequest(f"{what} is not valid JSON: {exc}") from None
    else:
        deep = nesting_levels_exceed(value)
    if deep:
        raise MalformedRequest(f"{what} nests deeper than {MAX_JSON_NESTING_LEVELS} levels")
    refuse_unencodable_text(raw, value, what)
    return value


async def read_json_object(request: Request, required: bool = False) -> dict[str, Any]:
    raw = await read_body(request)
    if not raw.strip():
        if required:
            raise MalformedRequest("request body must be a JSON object")
        return {}
    body = parse_json(raw)
    if not isinstance(body, dict):
        raise MalformedRequest("request body must be a JSON object")
    return body


def server_timing(timings: CallTimings, ingress_ms: float) -> dict[str, str]:
    parts = [f"{name};dur={timings[key]:.3f}" for name, key in TIMING_PARTS if key in timings]
    parts.append(f"ingress;dur={ingress_ms:.3f}")
    if timings.get("query_ahead"):  # a bound recall's query was embedded from the ingress
        parts.append(QUERY_AHEAD_PART)
    headers = {"Server-Timing": ", ".join(parts)}
    if "batch" in timings:
        headers["X-Batch-Size"] = str(timings["batch"])
    if timings.get("replayed"):
        headers[REPLAY_HEADER] = "true"
    return headers


def idempotency_key(request: Request) -> str | None:
    """The request's Idempotency-Key header, checked (400 when malformed), or None."""
    key = request.headers.get(IDEMPOTENCY_HEADER)
    return None if key is None else check_key(key)


def error_json(exc: BaseException, audience: str = TENANT) -> JSONResponse:
    """The error answer of `exc` as `audience` may read it (default: a tenant, who is never
    told deployment details)."""
    status, body = error_response(exc, audience)
    # an error that knows when asking again may succeed (rate limits, no room yet) says so,
    # and every 503 says to ask again (a process that died, a replica that did not confirm)
    retry_after_s = (
        getattr(exc, "retry_after_s", None) if isinstance(exc, MiniSphereError) else None
    )
    if retry_after_s is None and status == 503:
        retry_after_s = UNAVAILABLE_RETRY_AFTER_S
    headers = (
        {"Retry-After": str(max(1, math.ceil(retry_after_s)))}
        if retry_after_s is not None
        else None
    )
    return JSONResponse(body, status_code=status, headers=headers)


LOOPBACK_NETWORKS: list[IPNetwork] = [
    ipaddress.ip_network("127.0.0.0/8"),
    ipaddress.ip_network("::1/128"),
]


def client_address(request: Request) -> str:
    """The caller's address, whose failed authentications are budgeted. The peer, unless the
    peer is a configured trusted proxy (`MINISPHERE_TRUSTED_PROXIES`): then the nearest address
    in `X-Forwarded-For` that is not one (anyone can send the header, so only those count, or
    behind a load balancer one client's bad tokens would have rate-limited everyone).
    Behind Serve's HAProxy front (`http_front`), HAProxy on this node is one: it reaches the
    replica over loopback and names the client in the header (`actors.ray_env`)."""
    peer = request.client.host if request.client is not None else "unknown"
    settings = getattr(getattr(request.app.state, "gateway", None), "settings", None)
    trusted = trusted_networks(
        tuple(getattr(settings, "trusted_proxies", ())),
        getattr(settings, "http_front", "") == "haproxy",
    )
    if not trusted or not _within(peer, trusted):
        return peer
    forwarded = [
        hop.strip()
        for hop in ",".join(request.headers.getlist("x-forwarded-for")).split(",")
        if hop.strip()
    ]
    for hop in reversed(forwarded):
        if not _within(hop, trusted):
            return hop
    return forwarded[0] if forwarded else peer


@functools.lru_cache(maxsize=8)
def trusted_networks(listed: tuple[str, ...], haproxy_front: bool) -> tuple[IPNetwork, ...]:
    """The networks whose X-Forwarded-For is believed, parsed once (not per request)."""
    parsed = tuple(ipaddress.ip_network(n) for n in listed)
    return parsed + tuple(LOOPBACK_NETWORKS) if haproxy_front else parsed


def _within(address: str, networks: Iterable[IPNetwork]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False  # not an address (a malformed hop): never a trusted proxy
    return any(ip in network for network in networks)


def audience_of(gateway: WorkspaceGateway, token: str | None) -> str:
    """ADMIN for the admin token, else TENANT (a workspace token, or none at all)."""
    try:
        return ADMIN if token and gateway.is_admin(token) else TENANT
    except Exception:  # noqa: BLE001 - when in doubt, the caller is told least
        return TENANT


async def read_spec(request: Request, model: type[Spec], what: str, required: bool = False) -> Spec:
    """The request's JSON object body as `model`; a 400 naming `what` when it does not fit."""
    body = await read_json_object(request, required=required)
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise MalformedRequest(describe_validation_error(what, exc)) from None
