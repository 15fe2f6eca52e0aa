"""The one place that maps error classes to HTTP statuses.

Every error body is `{"error": {"code": ..., "message": ...}}`. Classes are matched along the
MRO, so a new subclass inherits its parent's status; an engine error nobody listed is a client
error (400). Anything that is not a `MiniSphereError` is a bug: it is logged with its traceback
and answered with a structured `internal` error, never with a framework page.
"""
from __future__ import annotations

import logging

from . import errors as E
from . import service_errors as S
from . import snapshot_errors as D

log = logging.getLogger("minisphere.http")

STATUS: dict[type, int] = {
    S.MalformedRequest: 400,
    E.InvalidArgument: 422,
    E.SelfLink: 422,
    S.Unauthenticated: 401,
    S.Forbidden: 403,
    E.NotFound: 404,
    E.KindGateViolation: 409,
    S.WorkspaceExists: 409,
    E.ContentTooLarge: 413,
    S.RequestTooLarge: 413,
    E.SchemaTooNew: 503,
    E.WorkspaceClosed: 503,
    S.WorkspaceUnavailable: 503,
    S.NotImplementedYet: 503,
    S.InternalError: 500,
    D.SnapshotNotFound: 404,
    D.SnapshotCorrupt: 422,
    D.SnapshotStoreUnavailable: 503,
    D.SnapshotError: 503,
    D.WorkspaceHibernating: 503,
    E.MiniSphereError: 400,
}


def status_for(exc: BaseException) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def as_named_error(exc: BaseException) -> E.MiniSphereError:
    """Any exception as a named error; unknown ones are logged and hidden behind `internal`."""
    if isinstance(exc, E.MiniSphereError):
        return exc
    if isinstance(exc, ImportError):
        return S.NotImplementedYet(f"this build does not implement that yet ({exc.name or exc})")
    if "sqlite" in type(exc).__module__:     # disk full, I/O error, locked: storage trouble
        log.error("storage error: %r", exc)
        return S.WorkspaceUnavailable(f"storage error: {exc}")
    log.error("unexpected error", exc_info=(type(exc), exc, exc.__traceback__))
    return S.InternalError("internal error; the service logged the details")


def error_response(exc: BaseException) -> tuple[int, dict]:
    named = as_named_error(exc)
    return status_for(named), named.to_dict()
