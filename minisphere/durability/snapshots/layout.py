"""Version names (`<UTC yyyymmddThhmmssmmmZ>-<seq:06d>`) and the store keys of a workspace's
versions: `<workspace>/<version>.db.gz` and its manifest `<workspace>/<version>.json`."""

from __future__ import annotations

import datetime as _dt
import re

from minisphere.durability.constants import SNAPSHOT_BLOB_SUFFIX, SNAPSHOT_MANIFEST_SUFFIX
from minisphere.durability.stores import SnapshotStore
from minisphere.errors import SnapshotNotFound

VERSION_PATTERN = re.compile(r"^(\d{8}T\d{9}Z)-(\d{6,})$")


def version_seq(version: str) -> int:
    match = VERSION_PATTERN.fullmatch(version)
    if not match:
        raise SnapshotNotFound(
            f"{version!r} is not a snapshot version (expected e.g. 20260101T120000000Z-000001)"
        )
    return int(match.group(2))


def version_taken_ms(version: str) -> int:
    """When a version was taken (epoch ms), from its name."""
    moment = _dt.datetime.strptime(version[:15], "%Y%m%dT%H%M%S").replace(tzinfo=_dt.UTC)
    return int(moment.timestamp()) * 1000 + int(version[15:18])


def version_name(now_ms: int, seq: int) -> str:
    """The name of the version numbered `seq`, taken at `now_ms`."""
    moment = _dt.datetime.fromtimestamp(now_ms / 1000, tz=_dt.UTC)
    return moment.strftime("%Y%m%dT%H%M%S") + f"{now_ms % 1000:03d}Z-{seq:06d}"


def blob_key(workspace_id: str, version: str) -> str:
    return f"{workspace_id}/{version}{SNAPSHOT_BLOB_SUFFIX}"


def manifest_key(workspace_id: str, version: str) -> str:
    return f"{workspace_id}/{version}{SNAPSHOT_MANIFEST_SUFFIX}"


def own_keys(store: SnapshotStore, workspace_id: str) -> list[str]:
    """The workspace's objects: directly under `<workspace>/`, not in a generation folder
    below it (those belong to other creations of the id; see `durability/generations.py`)."""
    prefix = f"{workspace_id}/"
    return [key for key in store.list_keys(prefix) if "/" not in key[len(prefix) :]]


def list_versions(store: SnapshotStore, workspace_id: str) -> list[str]:
    """Versions with a manifest, oldest first (ordered by sequence number)."""
    found = []
    for key in own_keys(store, workspace_id):
        name = key.rsplit("/", 1)[-1]
        if name.endswith(SNAPSHOT_MANIFEST_SUFFIX):
            version = name[: -len(SNAPSHOT_MANIFEST_SUFFIX)]
            if VERSION_PATTERN.fullmatch(version):
                found.append(version)
    return sorted(found, key=lambda v: (version_seq(v), v))
