"""The error answer every route may give, `{"error": {"code", "message"}}`, and the statuses
it is documented under."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from minisphere.http.answer_model import Answer


class ErrorDetail(Answer):
    code: str = Field(description="stable machine code, e.g. `not_found`, `invalid_argument`")
    message: str


class ErrorBody(Answer):
    error: ErrorDetail


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody} for status in (400, 401, 403, 404, 409, 413, 429, 422, 500, 503)
}
