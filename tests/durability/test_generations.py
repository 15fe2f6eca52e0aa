"""Snapshots per creation of a workspace id: a workspace re-created with the id of a deleted
one never lists or restores the versions the deleted one left behind."""

import pytest

from minisphere.durability.generations import delete_generation_snapshots, generation_store
from minisphere.durability.restores import restore_latest_good
from minisphere.durability.snapshots.layout import list_versions
from minisphere.durability.snapshots.manifest import list_snapshots
from minisphere.durability.snapshots.publish import take_snapshot
from minisphere.errors import SnapshotNotFound
from tests.durability.helpers import count, fill


def test_recreated_id_sees_none_of_the_previous_generations_snapshots(tmp_path, store):
    old_file, new_file = tmp_path / "old.db", tmp_path / "new.db"
    fill(old_file, ["the previous tenant's secret"])
    old = generation_store(store, "ws-same", "g-old")
    take_snapshot(old_file, old, "ws-same")  # its delete then failed to remove it
    new = generation_store(store, "ws-same", "g-new")
    assert list_versions(new, "ws-same") == [] and list_snapshots(new, "ws-same") == []
    with pytest.raises(SnapshotNotFound):  # its own file lost before a snapshot
        restore_latest_good(new, "ws-same", new_file)
    assert not new_file.exists()
    fill(new_file, ["the new tenant's own fact", "and another"])
    take_snapshot(new_file, new, "ws-same")
    assert [m["entryCount"] for m in list_snapshots(new, "ws-same")] == [2]
    assert [m["entryCount"] for m in list_snapshots(old, "ws-same")] == [1]


def test_older_layout_lists_only_its_own_versions_not_generation_folders(tmp_path, store):
    path = tmp_path / "w.db"
    fill(path, ["legacy"])
    take_snapshot(path, store, "ws-legacy")  # created before generations existed
    take_snapshot(path, generation_store(store, "ws-legacy", "g-later"), "ws-legacy")
    assert len(list_versions(store, "ws-legacy")) == 1
    restore_latest_good(store, "ws-legacy", tmp_path / "back.db")
    assert count(tmp_path / "back.db") == 1


def test_deleting_one_generation_leaves_the_others(tmp_path, store):
    path = tmp_path / "w.db"
    fill(path, ["x"])
    take_snapshot(path, store, "ws-mixed")
    for generation in ("g-a", "g-b"):
        take_snapshot(path, generation_store(store, "ws-mixed", generation), "ws-mixed")
    assert delete_generation_snapshots(store, "ws-mixed", "g-a") == 2  # blob and manifest
    assert list_versions(generation_store(store, "ws-mixed", "g-a"), "ws-mixed") == []
    assert len(list_versions(generation_store(store, "ws-mixed", "g-b"), "ws-mixed")) == 1
    assert delete_generation_snapshots(store, "ws-mixed", None) == 2  # the older layout's own
    assert len(list_versions(generation_store(store, "ws-mixed", "g-b"), "ws-mixed")) == 1


def test_manifest_names_the_blob_where_the_store_really_keeps_it(tmp_path, store):
    path = tmp_path / "w.db"
    fill(path, ["x"])
    manifest = take_snapshot(path, generation_store(store, "ws-keys", "g-1"), "ws-keys")
    assert manifest["blobKey"].startswith("ws-keys/g-1/")
    assert manifest["blobKey"] in store.list_keys("ws-keys/")
