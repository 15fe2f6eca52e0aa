"""The plain-Python workspace host: writes counted toward snapshots, restore by version,
hibernation, and re-activation from a snapshot when the file is missing."""

from concurrent.futures import Future

import pytest

from minisphere.durability.stores import S3SnapshotStore
from minisphere.errors import (
    NotFound,
    SnapshotStoreUnavailable,
    WorkspaceClosed,
    WorkspaceDataMissing,
)
from minisphere.hosting.host import WorkspaceHost
from minisphere.hosting.host_options import KnownState
from tests.durability.helpers import count, fill, free_port
from tests.support.hosts import BY_HAND


def write(host, content):
    future = Future()
    host.calls.submit_write("capture", {"content": content}, future.set_result)
    return future.result(timeout=30).unwrap()


def read(host, method, body=None):
    return host.calls.submit_read(method, body or {}).result(timeout=30)[0]


def make(tmp_path, store, embedder=None, **known):
    return WorkspaceHost(
        "ws-host",
        tmp_path / "ws-host" / "workspace.db",
        store=store,
        embedder=embedder,
        known=KnownState(**known),
        tuning=BY_HAND,
    )


def test_snapshot_restore_and_reactivation(tmp_path, local_store):
    host = make(tmp_path, local_store)
    assert host.activation == {"source": "new", "position": 0}
    kept = [write(host, f"kept fact {i}")["id"] for i in range(3)]
    assert host.snapshotter.pending_writes == 4  # 3 writes + "never snapshotted"
    first = host.states.snapshot_now()
    assert host.snapshotter.pending_writes == 0
    later = write(host, "a later fact")["id"]
    assert read(host, "getCount")["count"] == 4

    result = host.states.restore(first["version"])
    assert result["version"] == first["version"]
    assert read(host, "getCount")["count"] == 3
    assert read(host, "getEntry", {"id": kept[0]})["content"] == "kept fact 0"
    with pytest.raises(NotFound):
        read(host, "getEntry", {"id": later})
    write(host, "after the restore")  # writable again

    hibernated = host.hibernate()
    assert hibernated["snapshot"]["entryCount"] == 4 and not hibernated["pendingSnapshot"]
    with pytest.raises(WorkspaceClosed):  # closed: calls are refused, not reopened
        read(host, "getCount")

    host.path.unlink()  # "a new node": no local file
    again = make(tmp_path, local_store, expect_snapshot=True)
    try:
        assert again.activation["source"] == "snapshot"
        assert again.activation["version"] == hibernated["snapshot"]["version"]
        assert read(again, "getCount")["count"] == 4
        assert again.snapshotter.pending_writes == 0
    finally:
        again.close()


def test_hibernate_without_changes_takes_no_snapshot(tmp_path, local_store):
    host = make(tmp_path, local_store)
    write(host, "x")
    host.states.snapshot_now()
    out = host.hibernate()
    assert out["snapshot"] is None and out["error"] is None
    assert len(host.states.list_snapshots()) == 1


def test_missing_file_without_snapshot_is_refused_when_one_was_expected(tmp_path, local_store):
    with pytest.raises(WorkspaceDataMissing, match="refusing to open it older or empty"):
        make(tmp_path, local_store, expect_snapshot=True)


def test_hibernate_with_store_down_keeps_the_file_and_reports_pending(tmp_path, s3_endpoint):
    down = S3SnapshotStore(
        "b",
        endpoint_url=f"http://127.0.0.1:{free_port()}",
        region="us-east-1",
        connect_timeout_s=0.3,
        max_attempts=1,
    )
    with pytest.raises(SnapshotStoreUnavailable):  # no file and no way to fetch one: refuse
        make(tmp_path, down)
    fill(tmp_path / "ws-host" / "workspace.db", [])  # the directory created the file
    host = make(tmp_path, down)
    write(host, "acknowledged while S3 is down")
    out = host.hibernate()
    assert out["pendingSnapshot"] and "cannot reach" in out["error"]
    assert out["snapshots"]["lastFailureCode"] == "snapshot_store_unavailable"
    assert count(host.path) == 1  # nothing lost locally


def test_reads_do_not_make_the_workspace_dirty_for_snapshots(tmp_path, local_store):
    """A recall's own follow-up write (recall counts) must not count as a change: a workspace
    that is only read is not snapshotted again, at hibernation or by the write trigger."""
    host = make(tmp_path, local_store)
    entry = write(host, "a fact worth recalling")["id"]
    host.states.snapshot_now()
    for _ in range(5):
        assert read(host, "recall", {"query": "fact recalling"})["items"]
    host.writer.close()  # the follow-ups are committed
    assert host.workspace.get_entry(entry)["recallCount"] == 5
    assert host.snapshotter.pending_writes == 0
    out = host.hibernate()
    assert out["snapshot"] is None
    assert len(host.states.list_snapshots()) == 1


def test_failed_reopen_after_restore_answers_unavailable_then_recovers(
    tmp_path, local_store, monkeypatch
):
    """If opening the file fails right after a restore (disk full, say), calls get a clear
    WorkspaceUnavailable instead of crashing on a missing writer, and the host reopens the
    file by itself once opening works again."""
    import minisphere.hosting.host as host_module
    from minisphere.errors import WorkspaceUnavailable

    host = make(tmp_path, local_store)
    write(host, "restored fact")
    version = host.states.snapshot_now()["version"]
    real = host_module.Workspace
    failing = {"left": 2}

    def flaky_open(*args, **kwargs):
        if failing["left"]:
            failing["left"] -= 1
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(host_module, "Workspace", flaky_open)
    host.states.restore(version)  # the swap succeeded; the reopen did not
    with pytest.raises(WorkspaceUnavailable, match="cannot be opened"):
        read(host, "getCount")
    assert read(host, "getCount")["count"] == 1  # the next call opened it
    write(host, "writable again")
    host.close()


def test_a_warmed_host_has_its_reader_open_before_the_first_call_and_wrote_nothing(
    tmp_path, local_store
):
    host = make(tmp_path, local_store)
    write(host, "a fact")
    host.writer.close()
    before, pending = host.position(), host.snapshotter.pending_writes
    assert host.reads._conns == []  # nothing opened a reader yet
    result, _ = host.calls.warm_reads().result(timeout=30)
    assert result == {"count": 1}
    assert len(host.reads._conns) == 1  # the first call's thread and connection are ready
    assert host.position() == before
    assert host.snapshotter.pending_writes == pending  # not a change to snapshot


def test_a_read_started_on_arrival_never_opens_a_file_a_restore_has_closed(
    tmp_path, local_store, monkeypatch
):
    """start_read runs before admission: on a bound host it starts the recall's query and the
    read uses it; while a failed reopen left the file closed it answers NOT_PREPARED and opens
    nothing (only an admitted call may)."""
    import minisphere.hosting.host as host_module
    from minisphere.engine.embedding.hash_provider import HashProvider
    from minisphere.engine.hooks import NOT_PREPARED

    host = make(tmp_path, local_store, embedder=HashProvider(16))
    write(host, "the archive bucket keeps parquet files")
    version = host.states.snapshot_now()["version"]
    assert host.calls.start_read("getCount", {}) is NOT_PREPARED
    started = host.calls.start_read("recall", {"query": "parquet archive"})
    assert started is not NOT_PREPARED
    answer, _ = host.calls.submit_read("recall", {"query": "parquet archive"}, started).result(30)
    assert answer["queryUsed"]["vector"]["arm"] == "on"
    opened = []
    real = host_module.Workspace

    def failing_open(*args, **kwargs):
        opened.append(args)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(host_module, "Workspace", failing_open)
    host.states.restore(version)  # the reopen failed: the file is closed
    tried = len(opened)
    assert host.calls.start_read("recall", {"query": "parquet archive"}) is NOT_PREPARED
    assert len(opened) == tried
    monkeypatch.setattr(host_module, "Workspace", real)
    assert read(host, "getCount")["count"] == 1  # an admitted call opens it
    host.close()
