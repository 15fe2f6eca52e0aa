"""Where a workspace's replica lives: its key prefix and URL in the snapshot store (beside the
snapshots), the daemon's local copy of its recent history, and removing a replica."""

from __future__ import annotations

import re
import shutil
import urllib.parse
from pathlib import Path

from minisphere.durability.stores import SnapshotStore
from minisphere.settings import SnapshotSettings

REPLICA_FOLDER = "replicas.litestream"  # in the store; no workspace id has a dot
HISTORY_MARK = "h"  # a restarted history's folder in a replica's prefix: h00000001/, ...
HISTORY_DIGITS = 8
_HISTORY_FOLDER = re.compile(rf"{HISTORY_MARK}(\d{{{HISTORY_DIGITS}}})/")


def replica_prefix(workspace_id: str, generation: str | None) -> str:
    """The store keys of one creation's replica (beside the snapshots, in the same store)."""
    return f"{REPLICA_FOLDER}/{workspace_id}/{generation or 'legacy'}/"


def history_folder(number: int) -> str:
    """Where history `number` of a replica lives inside its prefix: the first (0) at the prefix
    itself, each restarted one (after a forget) in a folder of its own beside it."""
    return "" if number == 0 else f"{HISTORY_MARK}{number:0{HISTORY_DIGITS}d}/"


def history_url(base_url: str, number: int) -> str:
    """The URL of history `number` of the replica at `base_url` (an S3 URL keeps its query)."""
    if number == 0:
        return base_url
    head, mark, query = base_url.partition("?")
    return f"{head.rstrip('/')}/{history_folder(number).rstrip('/')}{mark}{query}"


def histories_in(keys: list[str], prefix: str) -> list[int]:
    """The numbers of the histories that the store's `keys` under `prefix` hold, newest first."""
    found = set()
    for key in keys:
        named = _HISTORY_FOLDER.match(key[len(prefix) :])
        found.add(int(named.group(1)) if named else 0)
    return sorted(found, reverse=True)


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
