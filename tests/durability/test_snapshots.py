"""Snapshots round-trip through both stores; versions are listed and restored; bad snapshots
are refused without touching the live file."""

import gzip
import hashlib
import json
import threading

import pytest

from minisphere.durability.restores import restore_latest_good, restore_snapshot
from minisphere.durability.snapshots.layout import blob_key, list_versions, manifest_key
from minisphere.durability.snapshots.manifest import list_snapshots
from minisphere.durability.snapshots.publish import take_snapshot
from minisphere.durability.stores import LocalDirSnapshotStore
from minisphere.engine.workspace import Workspace
from minisphere.errors import NotFound, SnapshotCorrupt, SnapshotError, SnapshotNotFound
from tests.durability.helpers import count, file_sha, fill


def test_round_trip(store, tmp_path):
    live = tmp_path / "ws" / "workspace.db"
    live.parent.mkdir()
    ids = fill(live, [f"snapshot fact {i}" for i in range(5)])
    manifest = take_snapshot(live, store, "ws-one", reason="test")
    assert manifest["entryCount"] == 5 and manifest["seq"] == 1
    assert manifest["compression"] == "gzip" and len(manifest["compressedSha256"]) == 64
    assert manifest["schemaVersion"] >= 1 and manifest["rawBytes"] > manifest["compressedBytes"]
    assert [m["version"] for m in list_snapshots(store, "ws-one")] == [manifest["version"]]

    elsewhere = tmp_path / "other-node" / "workspace.db"  # a node without the file
    result = restore_snapshot(store, "ws-one", elsewhere)
    assert result["version"] == manifest["version"] and result["aside"] is None
    with Workspace(elsewhere, synchronous="NORMAL") as ws:
        assert ws.get_count()["count"] == 5
        assert ws.get_entry(ids[3])["content"] == "snapshot fact 3"


def test_restore_earlier_version_drops_later_writes(store, tmp_path):
    live = tmp_path / "workspace.db"
    early = fill(live, ["alpha fact", "beta fact"])
    first = take_snapshot(live, store, "ws-pitr")
    late = fill(live, ["gamma fact", "delta fact"])
    second = take_snapshot(live, store, "ws-pitr")
    fill(live, ["epsilon fact"])
    assert list_versions(store, "ws-pitr") == [first["version"], second["version"]]
    assert second["seq"] == 2 and second["entryCount"] == 4

    result = restore_snapshot(store, "ws-pitr", live, first["version"])
    with Workspace(live, synchronous="NORMAL") as ws:
        assert ws.get_count()["count"] == 2
        assert ws.get_entry(early[0])["content"] == "alpha fact"
        for gone in late:
            with pytest.raises(NotFound):
                ws.get_entry(gone)
    assert count(result["aside"]) == 5  # the previous file was kept aside, whole

    restore_snapshot(store, "ws-pitr", live, second["version"])
    assert count(live) == 4


def _corrupt_blob(store, workspace_id, version, mutate):
    key = blob_key(workspace_id, version)
    data = store.get_bytes(key)
    store.put_bytes(key, mutate(data))


@pytest.mark.parametrize(
    "damage, words",
    [
        (lambda b: b[: len(b) // 2], "truncated"),
        (lambda b: b[:100] + bytes([b[100] ^ 0xFF]) + b[101:], "checksum mismatch"),
    ],
)
def test_damaged_snapshot_is_refused_and_live_file_untouched(store, tmp_path, damage, words):
    live = tmp_path / "workspace.db"
    fill(live, [f"fact {i} worth keeping" for i in range(20)])
    version = take_snapshot(live, store, "ws-bad")["version"]
    fill(live, ["one more fact after the snapshot"])
    before = file_sha(live)
    _corrupt_blob(store, "ws-bad", version, damage)
    with pytest.raises(SnapshotCorrupt, match=words) as caught:
        restore_snapshot(store, "ws-bad", live, version)
    assert "was not changed" in caught.value.message
    assert caught.value.code == "snapshot_corrupt"
    assert file_sha(live) == before and count(live) == 21
    assert not list(tmp_path.glob("*.pre-restore-*"))
    assert not list(tmp_path.glob(".restore-*"))


def test_consistent_checksums_but_broken_database_fails_integrity_check(local_store, tmp_path):
    live = tmp_path / "workspace.db"
    fill(live, [f"page filler {i} " + "x" * 2000 for i in range(30)])
    manifest = take_snapshot(live, local_store, "ws-rot")
    version = manifest["version"]
    raw = bytearray(gzip.decompress(local_store.get_bytes(blob_key("ws-rot", version))))
    for offset in range(4096 * 3 + 16, 4096 * 3 + 400):  # scribble over an inner page
        raw[offset] = 0x5A
    packed = gzip.compress(bytes(raw))
    manifest.update(
        rawBytes=len(raw),
        rawSha256=hashlib.sha256(raw).hexdigest(),
        compressedBytes=len(packed),
        compressedSha256=hashlib.sha256(packed).hexdigest(),
    )
    manifest.pop("tookMs")
    local_store.put_bytes(blob_key("ws-rot", version), packed)
    local_store.put_bytes(manifest_key("ws-rot", version), json.dumps(manifest).encode())
    before = file_sha(live)
    with pytest.raises(SnapshotCorrupt, match="not a sound SQLite file"):
        restore_snapshot(local_store, "ws-rot", live, version)
    assert file_sha(live) == before


def test_not_a_gzip_and_bad_manifest_are_refused(local_store, tmp_path):
    live = tmp_path / "workspace.db"
    fill(live, ["something"])
    version = take_snapshot(live, local_store, "ws-junk")["version"]
    local_store.put_bytes(manifest_key("ws-junk", version), b"{not json")
    with pytest.raises(SnapshotCorrupt, match="unreadable manifest"):
        restore_snapshot(local_store, "ws-junk", live, version)
    listed = list_snapshots(local_store, "ws-junk")
    assert listed[0]["version"] == version and "unreadable manifest" in listed[0]["error"]


def test_unknown_versions_and_missing_snapshots(store, tmp_path):
    live = tmp_path / "workspace.db"
    with pytest.raises(SnapshotNotFound):
        restore_snapshot(store, "ws-none", live)
    fill(live, ["x marks the spot"])
    take_snapshot(live, store, "ws-none")
    with pytest.raises(SnapshotNotFound):
        restore_snapshot(store, "ws-none", live, "20200101T000000000Z-000099")
    with pytest.raises(SnapshotNotFound, match="not a snapshot version"):
        restore_snapshot(store, "ws-none", live, "../../etc/passwd")
    assert list_snapshots(store, "ws-other") == []


def test_latest_good_skips_a_corrupt_newest(local_store, tmp_path):
    live = tmp_path / "workspace.db"
    fill(live, ["first"])
    take_snapshot(live, local_store, "ws-skip")
    fill(live, ["second"])
    newest = take_snapshot(live, local_store, "ws-skip")["version"]
    _corrupt_blob(local_store, "ws-skip", newest, lambda b: b[:-10])
    target = tmp_path / "fresh" / "workspace.db"
    result = restore_latest_good(local_store, "ws-skip", target)
    assert result["skipped"][0]["version"] == newest and count(target) == 1


def test_snapshot_under_concurrent_writes_is_consistent(local_store, tmp_path):
    live = tmp_path / "workspace.db"
    ws = Workspace(live, synchronous="NORMAL")
    stop = threading.Event()

    def writer():
        i = 0
        while not stop.is_set():
            ws.run_batch([("capture", {"content": f"busy fact {i}-{j}"}) for j in range(5)])
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        manifests = [take_snapshot(live, local_store, "ws-busy", keep=0) for _ in range(4)]
    finally:
        stop.set()
        thread.join()
        ws.close()
    for manifest in manifests:
        assert manifest["entryCount"] % 5 == 0  # whole batches only
        target = tmp_path / f"r-{manifest['seq']}" / "workspace.db"
        restore_snapshot(local_store, "ws-busy", target, manifest["version"])
        assert count(target) == manifest["entryCount"]


def test_old_versions_are_pruned(local_store, tmp_path):
    live = tmp_path / "workspace.db"
    fill(live, ["keep me"])
    made = [take_snapshot(live, local_store, "ws-prune", keep=2)["version"] for _ in range(4)]
    assert list_versions(local_store, "ws-prune") == made[-2:]
    assert len(local_store.list_keys("ws-prune/")) == 4  # two blobs + two manifests


def test_local_store_refuses_keys_that_climb_out(tmp_path):
    store = LocalDirSnapshotStore(tmp_path / "s")
    for key in ("../x", "a/../../b", "/abs", "", "a//b"):
        with pytest.raises(SnapshotError):
            store.put_bytes(key, b"x")


def test_snapshot_of_a_missing_file_is_a_named_error(local_store, tmp_path):
    with pytest.raises(SnapshotError, match="no file"):
        take_snapshot(tmp_path / "absent.db", local_store, "ws-gone")


def test_delete_visible_snapshots(store, tmp_path):
    from minisphere.durability.snapshots.pruning import delete_visible_snapshots

    live = tmp_path / "workspace.db"
    fill(live, ["doomed"])
    take_snapshot(live, store, "ws-del")
    take_snapshot(live, store, "ws-keep")
    assert delete_visible_snapshots(store, "ws-del") == 2
    assert list_versions(store, "ws-del") == [] and len(list_versions(store, "ws-keep")) == 1
