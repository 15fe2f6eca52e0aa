"""What a point-in-time restore guarantees: the restored state becomes the newest stored
version (so losing the file afterwards, or restoring without a version, comes back to it),
no snapshot of the replaced file can land after it, and a restore whose publication fails
changes nothing."""

import threading
from concurrent.futures import Future

import pytest

from minisphere.durability.snapshots.layout import list_versions
from minisphere.durability.snapshots.manifest import read_manifest
from minisphere.durability.stores import LocalDirSnapshotStore
from minisphere.errors import SnapshotStoreUnavailable
from minisphere.hosting.host import WorkspaceHost
from minisphere.hosting.host_options import KnownState
from tests.support.hosts import BY_HAND


def write(host, content):
    future = Future()
    host.calls.submit_write("capture", {"content": content}, future.set_result)
    return future.result(timeout=30).unwrap()


def count(host) -> int:
    return host.calls.submit_read("getCount", {}).result(timeout=30)[0]["count"]


def make(tmp_path, store, **known):
    return WorkspaceHost(
        "ws-r",
        tmp_path / "ws-r" / "workspace.db",
        store=store,
        known=KnownState(**known),
        tuning=BY_HAND,
    )


def test_restore_is_not_undone_by_losing_the_file_after_hibernation(tmp_path, store):
    host = make(tmp_path, store)
    write(host, "good state")
    v1 = host.states.snapshot_now()["version"]
    write(host, "the bad write")
    host.states.snapshot_now()  # V2: the state we restore away from
    restored = host.states.restore(v1)
    assert count(host) == 1
    newest = list_versions(host.store, "ws-r")[-1]
    assert newest == restored["published"]["version"] != v1
    manifest = read_manifest(host.store, "ws-r", newest)
    assert manifest["reason"] == "restore" and manifest["restoredFrom"] == v1
    assert host.hibernate()["snapshot"] is None  # nothing changed since the restore
    host.path.unlink()  # the node is gone
    again = make(tmp_path, store, expect_snapshot=True)
    try:
        assert again.activation["version"] == newest
        assert count(again) == 1
    finally:
        again.close()


def test_restore_without_a_version_after_a_restore_keeps_the_restored_state(tmp_path, local_store):
    host = make(tmp_path, local_store)
    write(host, "one")
    v1 = host.states.snapshot_now()["version"]
    write(host, "two")
    host.states.snapshot_now()
    host.states.restore(v1)
    host.states.restore(None)  # "the latest" is the restored state
    assert count(host) == 1
    host.close()


class SlowUploads(LocalDirSnapshotStore):
    """A local store whose next blob upload waits until released (a slow S3)."""

    def __init__(self, root):
        super().__init__(root)
        self.hold, self.release, self.started = False, threading.Event(), threading.Event()

    def put_file(self, key, source):
        if self.hold and key.endswith(".db.gz"):
            self.hold = False
            self.started.set()
            assert self.release.wait(30)
        super().put_file(key, source)


def test_snapshot_of_the_old_file_running_during_a_restore_does_not_end_up_newest(tmp_path):
    store = SlowUploads(tmp_path / "snapshots")
    host = make(tmp_path, store)
    write(host, "kept")
    v1 = host.states.snapshot_now()["version"]
    write(host, "to be undone")
    store.hold = True
    background = threading.Thread(target=host.states.snapshot_now, args=("periodic",))
    background.start()  # copies the 2-entry file, then waits
    assert store.started.wait(30)
    restoring = threading.Thread(target=host.states.restore, args=(v1,))
    restoring.start()
    restoring.join(0.5)
    assert restoring.is_alive()  # waits for the running snapshot
    store.release.set()
    background.join(30)
    restoring.join(30)
    newest = list_versions(host.store, "ws-r")[-1]
    assert read_manifest(host.store, "ws-r", newest)["reason"] == "restore"
    assert count(host) == 1
    host.close()


class BrokenUploads(LocalDirSnapshotStore):
    def put_file(self, key, source):
        if getattr(self, "broken", False):
            raise SnapshotStoreUnavailable("the store refused the upload")
        super().put_file(key, source)


def test_restore_whose_publication_fails_leaves_the_file_as_it_was(tmp_path):
    store = BrokenUploads(tmp_path / "snapshots")
    host = make(tmp_path, store)
    write(host, "one")
    v1 = host.states.snapshot_now()["version"]
    write(host, "two")
    store.broken = True
    with pytest.raises(SnapshotStoreUnavailable):
        host.states.restore(v1)
    assert count(host) == 2  # not swapped, and open again
    write(host, "still writable")
    host.close()


def test_a_keyed_write_arriving_again_after_a_restore_is_not_applied_again(tmp_path, store):
    """A keyed capture answered, then a restore to a snapshot from before it: a copy of the
    same call still in flight (or sent again by a caller who missed the answer) learns the
    first answer and brings the undone entry back nowhere."""
    host = make(tmp_path, store)
    write(host, "good state")
    before = host.states.snapshot_now()["version"]
    first = Future()
    host.calls.submit_write(
        "capture", {"content": "undone by the restore"}, first.set_result, key="k-late"
    )
    entry = first.result(timeout=30).value["id"]
    host.states.restore(before)
    again = Future()
    host.calls.submit_write(
        "capture", {"content": "undone by the restore"}, again.set_result, key="k-late"
    )
    assert tuple(again.result(timeout=30)) == (True, {"outcome": "stored", "id": entry})
    assert count(host) == 1
    host.close()
