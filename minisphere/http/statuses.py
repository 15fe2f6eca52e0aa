"""The one place that maps named errors to HTTP statuses, and picks each error's message for
the caller who reads it.

Classes are matched along the MRO, so a new subclass inherits its parent's status; a named
error nobody listed is a client error (400). Anything else is a bug: `as_named_error` logs it
and answers `internal` (500), never with a framework page.

Audience: an error whose class (or instance) has a `public_message` carries deployment details
in its `message` (a bucket, an endpoint, a local path). `error_response(exc, audience)` answers
the detailed message only to `ADMIN` and the public one to everybody else; the default audience
is `TENANT`, so a route that forgets to say who is calling leaks nothing. The detailed message
of such an error is logged on every answer, whoever the caller was.
"""

from __future__ import annotations

import logging
from typing import Any

from minisphere import errors as E
from minisphere.errors import ADMIN, TENANT

log = logging.getLogger("minisphere.http")

STATUS: dict[type, int] = {
    E.MalformedRequest: 400,
    E.InvalidArgument: 422,
    E.SelfLink: 422,
    E.Unauthenticated: 401,
    E.Forbidden: 403,
    E.NotFound: 404,
    E.KindGateViolation: 409,
    E.SupersessionCycle: 409,
    E.WorkspaceExists: 409,
    E.IdempotencyKeyReused: 409,
    E.ImportGap: 409,
    E.RateLimited: 429,
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

__all__ = ["ADMIN", "STATUS", "TENANT", "error_response", "status_for"]


def status_for(exc: BaseException) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def error_response(exc: BaseException, audience: str = TENANT) -> tuple[int, dict[str, Any]]:
    """(status, `{"error": {"code", "message"}}`) of any exception, for `audience`."""
    named = E.as_named_error(exc)
    status = status_for(named)
    if named.withholds_details:
        log.warning(
            "%s (%d) answered to %s: %s",
            named.code,
            status,
            "an admin" if audience == ADMIN else "a tenant without the details",
            named.message,
        )
    return status, named.to_dict(audience)
