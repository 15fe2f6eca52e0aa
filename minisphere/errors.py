"""Every named error of Mini-Sphere, each with a stable machine `code`.

An error is a `MiniSphereError` subclass: the code travels to clients in the body
`{"error": {"code", "message"}}`. Which HTTP status a class gets is decided in one place,
`minisphere.http.statuses`, matched along the class hierarchy, so a subclass inherits its
parent's status. Everything that is not a named error is a bug: `as_named_error` hides it
behind `internal` (and logs it) before it can leave a process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("minisphere.errors")


# Who reads an error's message: an operator holding the admin token sees `message` in full; a
# tenant (a workspace token, or a caller not yet authenticated) sees `public_message` when the
# error has one.
ADMIN = "admin"
TENANT = "tenant"


def _rebuilt_error(
    cls: type[MiniSphereError], message: str, state: dict[str, Any]
) -> MiniSphereError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


class MiniSphereError(Exception):
    """A named error. `message` may name deployment details (a bucket, an endpoint, a local
    path) only when the class (or the instance) sets `public_message`: that text is what a
    tenant is told instead, so it must name no infrastructure. The detailed message is still
    logged where the answer is made (`minisphere.http.statuses.error_response`)."""

    code = "internal"
    public_message: str | None = None  # None: `message` is fit for every caller

    def __init__(self, message: str, *, public_message: str | None = None):
        super().__init__(message)
        self.message = message
        if public_message is not None:
            self.public_message = public_message

    def __reduce__(
        self,
    ) -> tuple[Callable[..., MiniSphereError], tuple[type[MiniSphereError], str, dict[str, Any]]]:
        # Named errors cross processes (Ray pickles them): rebuilt from their state, not by
        # calling __init__ again, so a subclass taking more arguments (a Retry-After) survives
        return (_rebuilt_error, (type(self), self.message, self.__dict__))

    @property
    def withholds_details(self) -> bool:
        """True when tenants are told `public_message` instead of `message`."""
        return self.public_message is not None

    def message_for(self, audience: str = TENANT) -> str:
        """The message this audience may read; anything but ADMIN counts as a tenant."""
        if audience == ADMIN or self.public_message is None:
            return self.message
        return self.public_message

    def to_dict(self, audience: str = TENANT) -> dict[str, dict[str, str]]:
        return {"error": {"code": self.code, "message": self.message_for(audience)}}


# ---- the engine: one workspace file ------------------------------------------------------------
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


class SupersessionCycle(MiniSphereError):
    """A `supersedes` edge that would close a cycle of replacements (no member would be newest)."""

    code = "supersession_cycle"


class SchemaTooNew(MiniSphereError):
    """The file was written by a newer schema than this build knows."""

    code = "schema_too_new"


class WorkspaceClosed(MiniSphereError):
    code = "workspace_closed"


class IdempotencyKeyReused(MiniSphereError):
    """An idempotency key already used for a different call (another method or body)."""

    code = "idempotency_key_reused"


class EmbeddingError(MiniSphereError):
    """An embedding provider could not embed (bad response, timeout, wrong shape, no model).
    Writes never fail for it: the entry is stored and embedded later."""

    code = "embedding_failed"


# ---- the service: requests, tokens, workspaces, settings ---------------------------------------
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


class InsufficientScope(Forbidden):
    """A read token calling a write method."""

    code = "insufficient_scope"


class RateLimited(MiniSphereError):
    """Too many failed authentications from one client address; `retry_after_s` says when
    to try again."""

    code = "rate_limited"

    def __init__(self, message: str, retry_after_s: float):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class WorkspaceExists(MiniSphereError):
    code = "workspace_exists"


class WorkspaceUnavailable(MiniSphereError):
    """The workspace actor could not answer (restarting, stopped, or its outcome is unknown)."""

    code = "unavailable"


class NoWorkspaceSlots(WorkspaceUnavailable):
    """Workspace actors ask for a workspace slot and no node of the cluster advertises any, so
    none can start; `retry_after_s` says when asking again may find a node that does (one an
    autoscaler adds)."""

    code = "no_workspace_slots"
    public_message = "the service has no room to open workspaces right now; retry later"

    def __init__(self, message: str, retry_after_s: float):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Overloaded(WorkspaceUnavailable):
    """The node cannot finish this call within the caller's deadline (a wake would wait behind
    others for a process), so it was refused at once and not run: safe to send again, after
    `retry_after_s`."""

    code = "overloaded"
    public_message = "the service is at capacity; the call was not run, retry after a pause"

    def __init__(self, message: str, retry_after_s: float):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class WorkspaceHibernating(WorkspaceUnavailable):
    """The workspace actor is hibernating and took no part of the call; the caller re-activates
    the workspace and sends the call again (safe for writes too)."""

    code = "hibernating"


class WorkspaceDataMissing(WorkspaceUnavailable):
    """The newest acknowledged state of the workspace is in no copy this node can reach (its
    file is gone or stale, and the store holds only an older position). The workspace is
    refused rather than opened older or empty; an admin who accepts the loss restores a
    named snapshot version."""

    code = "workspace_data_missing"
    public_message = (
        "the workspace's newest data cannot be reached right now; it was not "
        "opened with older data. An operator can find the details in the log"
    )


class WorkspaceFenced(WorkspaceUnavailable):
    """A newer owner has taken the workspace over (its epoch is higher than this host's):
    this host must neither open nor write the file. Nothing of the refused call was written."""

    code = "fenced"


class ReplicationUnconfirmed(WorkspaceUnavailable):
    """`MINISPHERE_REPLICATION=sync`: the write committed on this node, but the replica did not
    confirm it within the bound, so it is not reported as durable. A keyed write sent again
    answers its stored result once the replica confirms."""

    code = "replication_unconfirmed"
    public_message = (
        "the write could not be confirmed on the replica in time; it may have "
        "been applied: send it again with the same Idempotency-Key"
    )


class InternalError(MiniSphereError):
    """A bug: logged with its traceback, reported without internals."""

    code = "internal"


class ConfigError(MiniSphereError):
    """Settings that cannot be used; the service must not start."""

    code = "invalid_config"
    public_message = "the service is misconfigured; an operator can find the details in its log"


# ---- durability: snapshots and their stores ----------------------------------------------------
# Snapshot messages name the store (bucket, endpoint, local directory) and file paths for the
# operator; tenants get the public message of the class.
class SnapshotError(MiniSphereError):
    """A snapshot or restore could not be done."""

    code = "snapshot_failed"
    public_message: str | None = (
        "the snapshot operation failed; an operator can find the details in the service log"
    )


class SnapshotStoreUnavailable(SnapshotError):
    """The snapshot store cannot be reached (S3 down, timeout, missing bucket, no access)."""

    code = "snapshot_store_unavailable"
    public_message = "the snapshot store is unavailable right now; try again later"


class SnapshotCorrupt(SnapshotError):
    """A stored snapshot fails its checksum, is truncated, does not decompress, or fails
    `PRAGMA integrity_check`. It is refused; the live file is left untouched. Its messages
    name only the workspace, the version and the check that failed (never a path or the
    store), so every caller may read them."""

    code = "snapshot_corrupt"
    public_message = None


class SnapshotNotFound(NotFound):
    """No such snapshot version (or no snapshot at all) for the workspace."""

    code = "snapshot_not_found"
    public_message = "no such snapshot"


# ---- import / export ---------------------------------------------------------------------------
class TransferError(MiniSphereError):
    code = "transfer_failed"


class ImportGap(TransferError):
    """An import chunk starts past the line after the last one applied: the lines between
    were never sent, and the import would call itself complete without them."""

    code = "import_gap"


class ImportFormatError(InvalidArgument):
    """A line of the JSONL file is not a valid export record (the message names the line)."""

    code = "import_format"


class ImportVersionError(ImportFormatError):
    """The file was written by an export format this build does not read."""

    code = "import_version"


# ---- pinned contracts and their evidence -------------------------------------------------------
class ContractPinError(MiniSphereError):
    """A contract file's bytes do not match its pin, or the file or the pin is missing."""

    code = "contract_pin_mismatch"

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        expected: str | None = None,
        actual: str | None = None,
    ):
        super().__init__(message)
        self.file, self.expected, self.actual = file, expected, actual


class ContractSurfaceError(MiniSphereError):
    """The routed methods or the engine disagree with the machine-readable contract surface."""

    code = "contract_surface_mismatch"

    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = list(problems or [])


class EvidenceError(MiniSphereError):
    """The evidence store refused or failed an operation (bucket, credentials, permissions)."""

    code = "evidence_error"
    public_message = (
        "the contract evidence store failed; an operator can find the details in the service log"
    )


class EvidenceConflict(EvidenceError):
    """The store already holds different bytes for the same contract version."""

    code = "evidence_conflict"


class EvidenceUnreachable(EvidenceError):
    """The S3 endpoint cannot be reached (refused, timed out, DNS)."""

    code = "evidence_unreachable"


class EvidenceVerifyError(EvidenceError):
    """A downloaded object does not hash to the local pin."""

    code = "evidence_verify_failed"


def as_named_error(exc: BaseException) -> MiniSphereError:
    """Any exception as a named error; unknown ones are logged and hidden behind `internal`."""
    if isinstance(exc, MiniSphereError):
        return exc
    if "sqlite" in type(exc).__module__:  # disk full, I/O error, locked: storage trouble
        log.error("storage error: %r", exc)
        return WorkspaceUnavailable(
            f"storage error: {exc}", public_message="the workspace's storage failed; retry shortly"
        )
    log.error("unexpected error", exc_info=(type(exc), exc, exc.__traceback__))
    return InternalError("internal error; the service logged the details")
