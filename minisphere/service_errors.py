"""Errors raised by the service layer (auth, workspaces, availability), next to the engine's.

They subclass the engine's `MiniSphereError`, so they carry a stable `code` and serialize to
the same `{"error": {"code", "message"}}` body. Statuses are decided in `http_errors` only.
"""
from .errors import MiniSphereError


class MalformedRequest(MiniSphereError):
    """The request itself cannot be read: not JSON, not an object, bad workspace id."""
    code = "malformed_request"


class RequestTooLarge(MiniSphereError):
    code = "request_too_large"


class Unauthenticated(MiniSphereError):
    """No bearer token, or a token that belongs to nothing."""
    code = "unauthenticated"


class Forbidden(MiniSphereError):
    """A valid token that may not do this (another workspace's, or a maintenance method)."""
    code = "forbidden"


class WorkspaceExists(MiniSphereError):
    code = "workspace_exists"


class WorkspaceUnavailable(MiniSphereError):
    """The workspace actor could not answer (restarting, stopped, or its outcome is unknown)."""
    code = "unavailable"


class NotImplementedYet(MiniSphereError):
    """A contract method whose engine part is not in this build."""
    code = "not_implemented"


class InternalError(MiniSphereError):
    """A bug: logged with its traceback, reported without internals."""
    code = "internal"
