"""The one error -> HTTP status table, and what an unknown error becomes."""

import pytest

from minisphere import errors as E
from minisphere.http.statuses import error_response, status_for


@pytest.mark.parametrize(
    "exc, status",
    [
        (E.MalformedRequest("x"), 400),
        (E.InvalidArgument("x"), 422),
        (E.SelfLink("x"), 422),
        (E.Unauthenticated("x"), 401),
        (E.Forbidden("x"), 403),
        (E.NotFound("x"), 404),
        (E.KindGateViolation("x"), 409),
        (E.WorkspaceExists("x"), 409),
        (E.IdempotencyKeyReused("x"), 409),
        (E.ContentTooLarge("x"), 413),
        (E.RequestTooLarge("x"), 413),
        (E.WorkspaceUnavailable("x"), 503),
        (E.SchemaTooNew("x"), 503),
        (ImportError("no module"), 500),
    ],
)
def test_error_statuses(exc, status):
    code, body = error_response(exc)
    assert code == status and set(body["error"]) == {"code", "message"}


def test_storage_errors_are_unavailable():
    from minisphere.engine import db

    code, body = error_response(db.OperationalError("database or disk is full"))
    assert code == 503 and body["error"]["code"] == "unavailable"


def test_unknown_errors_are_structured_and_hidden():
    code, body = error_response(ZeroDivisionError("secret detail"))
    assert code == 500 and body["error"]["code"] == "internal"
    assert "secret" not in body["error"]["message"]

    class NewEngineError(E.MiniSphereError):
        code = "new"

    assert status_for(NewEngineError("x")) == 400
