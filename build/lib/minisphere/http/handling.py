"""Reading requests and writing answers, shared by every route: bounded bodies, strict JSON,
the error body of any failure, the admin check, and the timing headers."""
from __future__ import annotations

import json

from fastapi import Request
from fastapi.responses import JSONResponse

from minisphere.control.auth import bearer_token
from minisphere.errors import MalformedRequest, RequestTooLarge
from minisphere.http.statuses import error_response

MAX_BODY_BYTES = 1024 * 1024
# Server-Timing parts, in order: (name in the header, key in the timings the actors report)
TIMING_PARTS = (("prepare", "prepare_ms"), ("queue", "queue_ms"), ("engine", "engine_ms"),
                ("actor", "actor_ms"), ("rpc", "rpc_ms"))


async def read_body(request: Request, limit_bytes: int = MAX_BODY_BYTES, hint: str = "") -> bytes:
    """The raw body, refused (413) past `limit_bytes` -- before reading it when declared."""
    declared = request.headers.get("content-length", "")
    size = int(declared) if declared.isdigit() else None
    if size is None or size <= limit_bytes:
        raw = await request.body()
        size = len(raw)
    if size > limit_bytes:
        raise RequestTooLarge(f"request body is {size} bytes; the limit is {limit_bytes}"
                              + (f"; {hint}" if hint else ""))
    return raw


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


async def read_json_object(request: Request, required: bool = False) -> dict:
    raw = await read_body(request)
    if not raw.strip():
        if required:
            raise MalformedRequest("request body must be a JSON object")
        return {}
    try:
        body = json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedRequest(f"request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise MalformedRequest("request body must be a JSON object")
    return body


def server_timing(timings: dict, ingress_ms: float) -> dict:
    parts = [f"{name};dur={timings[key]:.3f}" for name, key in TIMING_PARTS if key in timings]
    parts.append(f"ingress;dur={ingress_ms:.3f}")
    headers = {"Server-Timing": ", ".join(parts)}
    if "batch" in timings:
        headers["X-Batch-Size"] = str(timings["batch"])
    return headers


def error_json(exc: BaseException) -> JSONResponse:
    status, body = error_response(exc)
    return JSONResponse(body, status_code=status)


async def as_admin(gateway, request: Request, action):
    """Await `action()` for an admin caller; any failure (auth included) becomes the error JSON."""
    try:
        gateway.require_admin(bearer_token(request.headers.get("authorization")))
        return await action()
    except Exception as exc:  # noqa: BLE001 - answered as a structured error
        return error_json(exc)
