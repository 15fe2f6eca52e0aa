"""`POST /v1/w/{workspace}/{method}`: one route per contract method (and the maintenance
method), documented with its argument schema and its answer. The bearer token must be
authorized for the method on the workspace; the arguments are validated here, before any actor
is woken, and sent on validated. Timings come back in a `Server-Timing` header (the actors'
parts and the ingress; milliseconds) and `X-Batch-Size`."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from fastapi import Request
from fastapi.responses import JSONResponse

from minisphere.engine.methods import METHODS, Method, parse_args
from minisphere.http import links
from minisphere.http.callers import WorkspaceCall, WorkspaceId, workspace_caller
from minisphere.http.handling import (
    AUTH_SHOWN_MS,
    IDEMPOTENCY_HEADER,
    IDEMPOTENCY_KEY_PROMISE,
    IDEMPOTENCY_KEY_SCHEMA,
    REPLAY_HEADER,
    idempotency_key,
    read_json_object,
    server_timing,
)
from minisphere.http.route_docs import answers
from minisphere.http.routes import Routes
from minisphere.http.routes.maintenance import MAINTENANCE_TAG

IDEMPOTENCY_KEY_DOC = {
    "name": IDEMPOTENCY_HEADER,
    "in": "header",
    "required": False,
    "schema": IDEMPOTENCY_KEY_SCHEMA,
    "description": f"{IDEMPOTENCY_KEY_PROMISE}; the same key with another method or body is "
    "refused with 409 idempotency_key_reused.",
}
IDEMPOTENT_REPLAY_DOC = {
    REPLAY_HEADER: {
        "description": "true when the answer is the stored one of an earlier call with the same "
        "Idempotency-Key (nothing was written this time)",
        "schema": {"type": "string", "enum": ["true"]},
    }
}

routes = Routes()


def method_endpoint(name: str, method: Method) -> Callable[..., Awaitable[JSONResponse]]:
    """The route function of one method (named `call_<method>`)."""
    authorized = workspace_caller(name)

    async def endpoint(
        workspace: WorkspaceId, request: Request, call: WorkspaceCall = authorized
    ) -> JSONResponse:
        key = idempotency_key(request) if method.access == "write" else None
        args = parse_args(method, await read_json_object(request))
        if method.access == "maintenance":  # audited (trigger=manual)
            result, timings = await call.gateway.run_maintenance(workspace, name, args, call.caller)
        else:
            result, timings = await call.gateway.call(workspace, name, args, call.caller, key)
        ingress_ms = (time.perf_counter() - call.started) * 1e3
        if call.auth_ms >= AUTH_SHOWN_MS:
            timings["auth_ms"] = call.auth_ms
        return JSONResponse(result, headers=server_timing(timings, ingress_ms))

    endpoint.__name__ = f"call_{name}"
    return endpoint


def add_method_route(name: str, method: Method) -> None:
    write = method.access == "write"
    responses = answers(
        method.answer, links=links.entry_links() if name in links.ENTRY_ANSWERS else None
    )
    if write:
        responses[200] = {**responses[200], "headers": IDEMPOTENT_REPLAY_DOC}
    schema = method.args.model_json_schema(by_alias=True)
    routes.post(
        f"/v1/w/{{workspace}}/{name}",
        tags=[MAINTENANCE_TAG if method.access == "maintenance" else f"workspace {method.access}s"],
        summary=f"{name} ({method.access})",
        name=name,
        responses=responses,
        # a method with a required argument needs a body (none answers 422); the others take an
        # absent body as `{}`
        openapi_extra={
            "parameters": [IDEMPOTENCY_KEY_DOC] if write else [],
            "requestBody": {
                "required": bool(schema.get("required")),
                "content": {"application/json": {"schema": schema}},
            },
        },
    )(method_endpoint(name, method))


for _name, _method in METHODS.items():
    add_method_route(_name, _method)
