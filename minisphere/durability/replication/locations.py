"""Where a workspace's replica lives: its key prefix and URL in the snapshot store (beside the
snapshots), the daemon's local copy of its recent history, and removing a replica."""

from __future__ import annotations

import shutil
import urllib.parse
from pathlib import Path

from minisphere.durability.stores import SnapshotStore
from minisphere.settings import SnapshotSettings

REPLICA_FOLDER = "replicas.litestream"  # in the store; no workspace id has a dot


def replica_prefix(workspace_id: str, generation: str | None) -> str:
    """The store keys of one creation's replica (beside the snapshots, in the same store)."""
    return f"{REPLICA_FOLDER}/{workspace_id}/{generation or 'legacy'}/"


def delete_replica(store: SnapshotStore, workspace_id: str, generation: str | None) -> int:
    """Remove every object of one creation's replica from the store; how many there were."""
    keys = store.list_keys(replica_prefix(workspace_id, generation))
    for key in keys:
        store.delete(key)
    return len(keys)


def local_history(db_path: Path) -> Path:
    """Where the daemon keeps its own copy of a database's recent history, beside the file."""
    return db_path.with_name(f".{db_path.name}-litestream")


def drop_local_history(db_path: Path) -> None:
    """Delete the daemon's local history of a file (it holds the pages of past transactions,
    forgotten text included); nothing to do when there is none."""
    shutil.rmtree(local_history(db_path), ignore_errors=True)


def replica_url(snapshots: SnapshotSettings, workspace_id: str, generation: str | None) -> str:
    """Where one creation of a workspace is replicated: beside its snapshots, in the same store."""
    tail = replica_prefix(workspace_id, generation).rstrip("/")
    if snapshots.store != "s3":
        return Path(snapshots.local_dir, tail).as_uri()
    s3 = snapshots.s3
    query = {
        key: value
        for key, value in (("endpoint", s3.endpoint_url), ("region", s3.region or "us-east-1"))
        if value
    }
    return f"s3://{s3.bucket}/{s3.prefix}{tail}" + (
        f"?{urllib.parse.urlencode(query)}" if query else ""
    )
