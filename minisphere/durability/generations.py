"""Snapshots per creation of a workspace id: `generation_store(store, workspace_id, generation)`.

Each creation of a workspace gets a generation (the control plane draws it), and its snapshots
live under `<workspace>/<generation>/` instead of `<workspace>/`. The view rewrites the keys
of one workspace, so the snapshot code keeps speaking of `<workspace>/<version>` and cannot
reach another generation's versions: a workspace re-created with the id of a deleted one never
lists or restores what the deleted one left (say, because the store was down while it was
deleted). Workspaces created before generations existed have none (None) and keep the older
layout; their listing skips the generation folders (see `snapshots.list_versions`).
"""

from __future__ import annotations

from pathlib import Path

from minisphere.durability.snapshots.pruning import delete_visible_snapshots
from minisphere.durability.stores import SnapshotStore
from minisphere.errors import SnapshotError


class _GenerationView(SnapshotStore):
    def __init__(self, inner: SnapshotStore, workspace_id: str, generation: str):
        self.inner = inner
        self._outer = f"{workspace_id}/"
        self._stored = f"{workspace_id}/{generation}/"
        self.description = inner.description

    def stored_key(self, key: str) -> str:
        return self.inner.stored_key(self._key(key))

    def _key(self, key: str) -> str:
        if not key.startswith(self._outer):
            raise SnapshotError(f"snapshot key {key!r} is outside workspace {self._outer[:-1]}")
        return self._stored + key[len(self._outer) :]

    def put_file(self, key: str, source: Path) -> None:
        self.inner.put_file(self._key(key), source)

    def get_file(self, key: str, target: Path) -> None:
        self.inner.get_file(self._key(key), target)

    def list_keys(self, prefix: str) -> list[str]:
        stored = self._key(prefix)
        return [self._outer + key[len(self._stored) :] for key in self.inner.list_keys(stored)]

    def delete(self, key: str) -> None:
        self.inner.delete(self._key(key))


def generation_store(
    store: SnapshotStore, workspace_id: str, generation: str | None
) -> SnapshotStore:
    """The store as one generation of `workspace_id` sees it (None: the older layout)."""
    if generation is None:
        return store
    return _GenerationView(store, workspace_id, generation)


def delete_generation_snapshots(
    store: SnapshotStore, workspace_id: str, generation: str | None
) -> int:
    """Remove every snapshot of one generation of the workspace; returns how many objects."""
    return delete_visible_snapshots(generation_store(store, workspace_id, generation), workspace_id)
