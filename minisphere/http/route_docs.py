"""A route's OpenAPI documentation: the answers it gives (with the error answers every route
may give) and the JSON body it reads."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from minisphere.http.error_responses import ERROR_RESPONSES


def answers(
    model: type[Any], status: int = 200, links: dict[str, Any] | None = None
) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for a route answering `model`, an answer model or one of
    `minisphere.wire`'s answer TypedDicts (documentation only: the routes
    return the engine's JSON as is), with the answer's OpenAPI `links` (`minisphere.http.links`)
    when given."""
    answer: dict[str, Any] = {"model": model}
    if links:
        answer["links"] = links
    return {status: answer, **ERROR_RESPONSES}


def json_body(model: type[BaseModel], required: bool | None = None) -> dict[str, Any]:
    """OpenAPI `openapi_extra` documenting a JSON body of `model` (the routes read it with
    `handling.read_spec`, not through FastAPI's own body parsing)."""
    body: dict[str, Any] = {"content": {"application/json": {"schema": model.model_json_schema()}}}
    if required is not None:
        body = {"required": required, **body}
    return {"requestBody": body}
