"""The one place that maps named errors to HTTP statuses.

Classes are matched along the MRO, so a new subclass inherits its parent's status; a named
error nobody listed is a client error (400). Anything else is a bug: `as_named_error` logs it
and answers `internal` (500), never with a framework page.
"""
from __future__ import annotations

from minisphere import errors as E

STATUS: dict[type, int] = {
    E.MalformedRequest: 400,
    E.InvalidArgument: 422,
    E.SelfLink: 422,
    E.Unauthenticated: 401,
    E.Forbidden: 403,
    E.NotFound: 404,
    E.KindGateViolation: 409,
    E.WorkspaceExists: 409,
    E.ContentTooLarge: 413,
    E.RequestTooLarge: 413,
    E.SchemaTooNew: 503,
    E.WorkspaceClosed: 503,
    E.WorkspaceUnavailable: 503,
    E.InternalError: 500,
    E.ConfigError: 500,
    E.EmbeddingError: 503,
    E.SnapshotNotFound: 404,
    E.SnapshotCorrupt: 422,
    E.SnapshotStoreUnavailable: 503,
    E.SnapshotError: 503,
    E.MiniSphereError: 400,
}


def status_for(exc: BaseException) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def error_response(exc: BaseException) -> tuple[int, dict]:
    named = E.as_named_error(exc)
    return status_for(named), named.to_dict()
