"""A version's manifest: what it must hold, reading it back, and listing a workspace's versions.

A manifest comes back from a store that someone else may have written to, so nothing in it is
trusted before `SnapshotManifest` has checked it: it describes this version of this workspace,
holds the sizes and digests of both files, every count is a non-negative integer (JSON's
`true` is not one) and every digest 64 lowercase hex digits. The manifest handed on is the
stored mapping itself, every field kept.
"""

from __future__ import annotations

import json
import logging
from typing import Annotated, Any, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, model_validator
from pydantic_core import ErrorDetails

from minisphere.durability.constants import SNAPSHOT_FORMAT_VERSION, SNAPSHOT_MAX_MANIFEST_BYTES
from minisphere.durability.snapshots.layout import list_versions, manifest_key, version_seq
from minisphere.durability.stores import SnapshotStore
from minisphere.errors import (
    TENANT,
    SnapshotCorrupt,
    SnapshotError,
    SnapshotNotFound,
    SnapshotStoreUnavailable,
)
from minisphere.wire.stored_states import SnapshotManifest as StoredManifest

log = logging.getLogger("minisphere.snapshots")
MANIFEST_REQUIRED = ("compressedBytes", "compressedSha256", "rawBytes", "rawSha256")
MANIFEST_COUNTS = (
    "format",
    "seq",
    "schemaVersion",
    "entryCount",
    "rawBytes",
    "compressedBytes",
    "createdAtMs",
    "position",
)
MANIFEST_DIGESTS = ("rawSha256", "compressedSha256")
MANIFEST_COMPRESSION = "gzip"
_SHOWN_VALUE_CHARS = 40  # of a bad field's value, in the refusal
# a version's manifest as stored: a JSON object, its fields checked by `SnapshotManifest` and
# any others kept as they are (the wire's shape names the fields this build knows)
Manifest = StoredManifest

Count = Annotated[int, Field(strict=True, ge=0)]
Digest = Annotated[str, Field(strict=True, pattern=r"^[0-9a-f]{64}$")]


class SnapshotManifest(BaseModel):
    """The fields a manifest is checked for; the others are kept as they are, unchecked. The
    version and workspace it must describe come in the validation context."""

    # built on the first manifest read, not when a workspace actor imports this module (as the
    # engine's argument models are)
    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    format: Count = 0
    seq: Count = 0
    schema_version: Count = Field(0, alias="schemaVersion")
    entry_count: Count = Field(0, alias="entryCount")
    raw_bytes: Count = Field(alias="rawBytes")
    compressed_bytes: Count = Field(alias="compressedBytes")
    created_at_ms: Count = Field(0, alias="createdAtMs")
    position: Count = 0
    raw_sha256: Digest = Field(alias="rawSha256")
    compressed_sha256: Digest = Field(alias="compressedSha256")

    @model_validator(mode="before")
    @classmethod
    def _describes_this_version(cls, manifest: Any, info: ValidationInfo) -> Any:
        wanted = info.context or {}
        if not isinstance(manifest, dict) or manifest.get("version") != wanted.get("version"):
            raise ValueError("manifest does not describe this version")
        workspace = wanted.get("workspace")
        if manifest.get("workspace", workspace) != workspace:
            raise ValueError("manifest describes another workspace")
        return manifest


def _shown(value: Any) -> str:
    return repr(value)[:_SHOWN_VALUE_CHARS]


def _first_refusal(error: ValidationError) -> str:
    """The refusal of the first failed check, in the order a reader would look: what the
    manifest describes, the fields it lacks, then each count and each digest."""
    order = (*MANIFEST_COUNTS, *MANIFEST_DIGESTS)

    def rank(detail: ErrorDetails) -> tuple[int, int]:
        if not detail["loc"]:
            return (0, 0)
        field = str(detail["loc"][0])
        if detail["type"] == "missing":
            return (1, MANIFEST_REQUIRED.index(field))
        return (2, order.index(field))

    detail = min(error.errors(), key=rank)
    if not detail["loc"]:
        return str(detail["ctx"]["error"])
    field = str(detail["loc"][0])
    if detail["type"] == "missing":
        return f"manifest lacks {field}"
    if field in MANIFEST_DIGESTS:
        return f"{field} must be 64 hex digits, got {_shown(detail['input'])}"
    return f"{field} must be a non-negative integer, got {_shown(detail['input'])}"


def check_manifest(manifest: Any, workspace_id: str, version: str) -> Manifest:
    """The manifest, or ValueError naming the first field that is missing or of the wrong
    type (counts are non-negative integers, digests 64 hex digits)."""
    try:
        SnapshotManifest.model_validate(
            manifest, context={"version": version, "workspace": workspace_id}
        )
    except ValidationError as exc:
        raise ValueError(_first_refusal(exc)) from None
    return cast(Manifest, manifest)  # the model took it: a JSON object


def read_manifest(store: SnapshotStore, workspace_id: str, version: str) -> Manifest:
    version_seq(version)
    try:
        raw = store.get_bytes(manifest_key(workspace_id, version), SNAPSHOT_MAX_MANIFEST_BYTES)
    except SnapshotCorrupt as exc:  # larger than a manifest can be
        raise SnapshotCorrupt(
            f"snapshot {workspace_id}@{version}: unreadable manifest ({exc.message})"
        ) from None
    try:
        manifest = check_manifest(json.loads(raw), workspace_id, version)
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly nested JSON
        why = exc if isinstance(exc, ValueError) else "nested too deeply"
        raise SnapshotCorrupt(
            f"snapshot {workspace_id}@{version}: unreadable manifest ({why})"
        ) from None
    if (manifest.get("format") or 0) > SNAPSHOT_FORMAT_VERSION:
        newer = (
            f"snapshot {workspace_id}@{version} has format {manifest['format']}; this "
            f"build reads up to {SNAPSHOT_FORMAT_VERSION}"
        )
        raise SnapshotError(newer, public_message=newer)  # names nothing of the deployment
    if manifest.get("compression", MANIFEST_COMPRESSION) != MANIFEST_COMPRESSION:
        raise SnapshotCorrupt(
            f"snapshot {workspace_id}@{version}: unreadable manifest "
            f"(compression {_shown(manifest['compression'])} is not gzip)"
        )
    return manifest


def list_snapshots(store: SnapshotStore, workspace_id: str) -> list[Manifest]:
    """Every version's manifest, oldest first. A manifest that cannot be read is listed with
    `error`, in words any caller may read (the listing also reaches workspace tokens); the
    details are logged. An unreachable store fails the whole listing."""
    listed: list[Manifest] = []
    for version in list_versions(store, workspace_id):
        try:
            listed.append(read_manifest(store, workspace_id, version))
        except SnapshotStoreUnavailable:
            raise
        except (SnapshotError, SnapshotNotFound) as exc:
            if exc.withholds_details:
                log.warning("snapshot %s@%s not listed: %s", workspace_id, version, exc.message)
            listed.append(
                {"version": version, "workspace": workspace_id, "error": exc.message_for(TENANT)}
            )
    return listed
