"""Named error types of the engine.

Every error carries a stable machine `code` and a human message. The HTTP layer maps the
classes to status codes in exactly one place (`minisphere.http_errors`); nothing else decides a
status.
"""


class MiniSphereError(Exception):
    code = "internal"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict:
        return {"error": {"code": self.code, "message": self.message}}


class InvalidArgument(MiniSphereError):
    """Wrong type, unknown enum value, out-of-range number, malformed id, unknown field."""
    code = "invalid_argument"


class ContentTooLarge(MiniSphereError):
    code = "content_too_large"


class NotFound(MiniSphereError):
    code = "not_found"


class KindGateViolation(MiniSphereError):
    """An edge type whose kind gate the endpoints do not satisfy (e.g. `follows` needs episodic)."""
    code = "kind_gate_violation"


class SelfLink(MiniSphereError):
    code = "self_link"


class SchemaTooNew(MiniSphereError):
    """The file was written by a newer schema than this build knows."""
    code = "schema_too_new"


class WorkspaceClosed(MiniSphereError):
    code = "workspace_closed"
