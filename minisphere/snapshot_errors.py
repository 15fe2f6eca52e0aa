"""Named errors of snapshots, restores and hibernation (HTTP statuses are decided in
`http_errors` only)."""
from .errors import MiniSphereError, NotFound
from .service_errors import WorkspaceUnavailable


class SnapshotError(MiniSphereError):
    """A snapshot or restore could not be done."""
    code = "snapshot_failed"


class SnapshotStoreUnavailable(SnapshotError):
    """The snapshot store cannot be reached (S3 down, timeout, missing bucket, no access)."""
    code = "snapshot_store_unavailable"


class SnapshotCorrupt(SnapshotError):
    """A stored snapshot fails its checksum, is truncated, does not decompress, or fails
    `PRAGMA integrity_check`. It is refused; the live file is left untouched."""
    code = "snapshot_corrupt"


class SnapshotNotFound(NotFound):
    """No such snapshot version (or no snapshot at all) for the workspace."""
    code = "snapshot_not_found"


class WorkspaceHibernating(WorkspaceUnavailable):
    """The workspace actor is hibernating and took no part of the call; the ingress
    re-activates the workspace and sends the call again (safe for writes too)."""
    code = "hibernating"
