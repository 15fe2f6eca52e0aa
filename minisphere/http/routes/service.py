"""Public service routes: `GET /healthz` and `GET /v1/contracts` (the pinned contracts and the
routed methods)."""

from __future__ import annotations

from typing import Any

from fastapi import Request

from minisphere.engine.methods import METHODS
from minisphere.http import service_responses as S
from minisphere.http.route_docs import answers
from minisphere.http.routes import Routes

routes = Routes(tags=["service"])


@routes.get("/healthz", responses=answers(S.Health))
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@routes.get("/v1/contracts", responses=answers(S.ContractsAnswer))
async def list_contracts(request: Request) -> dict[str, Any]:
    return {
        "contracts": request.app.state.contracts,
        "methods": [
            {"name": m.name, "access": m.access, "positional": list(m.positional)}
            for m in METHODS.values()
        ],
    }
