"""Deleting versions: all but the newest few after a snapshot, one version, or every version a
store shows of a workspace. A manifest goes before its blob, so no listed version ever points
at a missing blob."""

from __future__ import annotations

import logging

from minisphere.durability.constants import SNAPSHOT_MANIFEST_SUFFIX
from minisphere.durability.snapshots.layout import (
    blob_key,
    list_versions,
    manifest_key,
    own_keys,
)
from minisphere.durability.stores import SnapshotStore
from minisphere.errors import SnapshotError

log = logging.getLogger("minisphere.snapshots")


def prune(
    store: SnapshotStore, workspace_id: str, keep: int, versions: list[str] | None = None
) -> list[str]:
    """Delete all but the newest `keep` versions (manifest first). Failures are only logged."""
    versions = list_versions(store, workspace_id) if versions is None else versions
    doomed = versions[:-keep] if keep > 0 else []
    for version in doomed:
        try:
            delete_version(store, workspace_id, version)
        except SnapshotError as exc:
            log.warning("could not prune snapshot %s@%s: %s", workspace_id, version, exc.message)
    return doomed


def delete_version(store: SnapshotStore, workspace_id: str, version: str) -> None:
    """One version gone, its manifest first (no listed version points at a missing blob)."""
    store.delete(manifest_key(workspace_id, version))
    store.delete(blob_key(workspace_id, version))


def delete_visible_snapshots(store: SnapshotStore, workspace_id: str) -> int:
    """Remove every object of the workspace that this store shows (through a generation view:
    that generation's; the store itself: the older layout's own); returns how many."""
    keys = own_keys(store, workspace_id)
    for key in sorted(keys, key=lambda k: not k.endswith(SNAPSHOT_MANIFEST_SUFFIX)):
        store.delete(key)  # manifests first: no version points at a lost blob
    return len(keys)
