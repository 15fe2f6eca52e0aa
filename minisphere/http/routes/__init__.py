"""The routes, one module an audience, each a `Routes` group that `app.build_api` adds in the
order the published OpenAPI document lists them: `service` (health, contracts), `admin`
(workspaces and their snapshots), `tokens` (whoami and workspace tokens), `maintenance`
(staleness runs), `workspace_rpc` (one route per contract method) and `transfer` (JSONL import
and export, when the app is given the operations). Who may call a route is a dependency of
`minisphere.http.callers`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import FastAPI

# a route's endpoint: any function FastAPI can call
Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


class Routes:
    """Routes declared like FastAPI's (`@routes.get(path, **options)`, `options` those of
    `FastAPI.add_api_route`; `defaults` apply to each) and added to an app, in the declared
    order, by `add_to(api)`. Not an `APIRouter`: `include_router` adds a router as one nested
    entry of the app's routes, which the request log's route table cannot label."""

    def __init__(self, **defaults: Any) -> None:
        self.defaults = defaults
        self.declared: list[tuple[str, Callable[..., Any], dict[str, Any]]] = []

    def route(
        self, path: str, methods: list[str], **options: Any
    ) -> Callable[[Endpoint], Endpoint]:
        def declare(endpoint: Endpoint) -> Endpoint:
            # the answer is the JSON the endpoint built (documented by `responses`): never a
            # response model FastAPI would make of the endpoint's return annotation
            route = {"response_model": None, **self.defaults, **options, "methods": methods}
            self.declared.append((path, endpoint, route))
            return endpoint

        return declare

    def get(self, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self.route(path, ["GET"], **options)

    def post(self, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self.route(path, ["POST"], **options)

    def delete(self, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self.route(path, ["DELETE"], **options)

    def add_to(self, api: FastAPI) -> None:
        for path, endpoint, options in self.declared:
            api.add_api_route(path, endpoint, **options)
