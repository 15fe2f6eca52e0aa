"""Taking a snapshot of a workspace file, and storing a self-contained database file as the
workspace's next version (compressed blob first, its manifest last)."""

from __future__ import annotations

import json
import logging
import tempfile
import time
from pathlib import Path

from minisphere.durability.constants import SNAPSHOT_FORMAT_VERSION
from minisphere.durability.snapshots.layout import (
    blob_key,
    list_versions,
    manifest_key,
    version_name,
    version_seq,
)
from minisphere.durability.snapshots.manifest import Manifest
from minisphere.durability.snapshots.packing import compacted_copy, compress
from minisphere.durability.snapshots.pruning import prune
from minisphere.durability.stores import SnapshotStore
from minisphere.engine import db
from minisphere.engine.clock import epoch_ms, iso_utc
from minisphere.errors import SnapshotError
from minisphere.files import sized_sha256
from minisphere.settings import SNAPSHOT_KEEP_VERSIONS

log = logging.getLogger("minisphere.snapshots")


def take_snapshot(
    db_path: str | Path,
    store: SnapshotStore,
    workspace_id: str,
    *,
    reason: str = "manual",
    keep: int = SNAPSHOT_KEEP_VERSIONS,
    now_ms: int | None = None,
) -> Manifest:
    """Snapshot the live file at `db_path` into `store`; returns the manifest.

    Store failures raise `SnapshotStoreUnavailable`; nothing partial becomes a version (the
    manifest is written after the blob).
    """
    db_path = Path(db_path)
    if not db_path.exists():
        raise SnapshotError(f"workspace {workspace_id} has no file at {db_path} to snapshot")
    started = time.perf_counter()
    existing = list_versions(store, workspace_id)  # reaches the store first: fail fast
    with tempfile.TemporaryDirectory(prefix=".snapshot-", dir=db_path.parent) as folder:
        raw = Path(folder) / "copy.db"
        try:
            schema, entries, position = compacted_copy(db_path, raw)
        except db.DatabaseError as exc:
            raise SnapshotError(f"cannot copy workspace {workspace_id}: {exc}") from None
        manifest = publish_file(
            raw,
            store,
            workspace_id,
            existing,
            reason=reason,
            schema=schema,
            entries=entries,
            now_ms=now_ms,
            position=position,
        )
    manifest["tookMs"] = round((time.perf_counter() - started) * 1e3, 3)
    if keep > 0:
        prune(store, workspace_id, keep, [*existing, manifest["version"]])
    return manifest


def publish_file(
    raw: Path,
    store: SnapshotStore,
    workspace_id: str,
    existing: list[str],
    *,
    reason: str,
    schema: int,
    entries: int,
    now_ms: int | None = None,
    position: int,
    restored_from: str | None = None,
) -> Manifest:
    """Compress the self-contained database file `raw` and store it as the workspace's next
    version (after `existing`, its current versions); returns the manifest. `position`: that
    of the state it holds; `restored_from`: the version a restore stores again."""
    now_ms = now_ms if now_ms is not None else epoch_ms()
    seq = (version_seq(existing[-1]) + 1) if existing else 1
    version = version_name(now_ms, seq)
    packed = raw.with_name(raw.name + ".gz")
    raw_bytes, raw_sha = sized_sha256(raw)
    compress(raw, packed)
    try:
        packed_bytes, packed_sha = sized_sha256(packed)
        manifest: Manifest = {
            "format": SNAPSHOT_FORMAT_VERSION,
            "workspace": workspace_id,
            "version": version,
            "seq": seq,
            "createdAt": iso_utc(now_ms, milliseconds=True),
            "createdAtMs": now_ms,
            "reason": reason,
            "schemaVersion": schema,
            "entryCount": entries,
            "compression": "gzip",
            "rawBytes": raw_bytes,
            "rawSha256": raw_sha,
            "compressedBytes": packed_bytes,
            "compressedSha256": packed_sha,
            "blobKey": store.stored_key(blob_key(workspace_id, version)),
            "position": position,
        }
        if restored_from is not None:
            manifest["restoredFrom"] = restored_from
        store.put_file(blob_key(workspace_id, version), packed)
        store.put_bytes(
            manifest_key(workspace_id, version), json.dumps(manifest, sort_keys=True).encode()
        )
    finally:
        packed.unlink(missing_ok=True)
    log.info(
        "snapshot %s@%s (%s): %d entries, %d -> %d bytes",
        workspace_id,
        version,
        reason,
        entries,
        raw_bytes,
        packed_bytes,
    )
    return manifest
