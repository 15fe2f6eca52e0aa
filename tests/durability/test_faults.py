"""S3 unreachable: snapshots fail fast with a named error, the failure is recorded, retried
with backoff, and succeed once the store is back."""

import time
from urllib.parse import urlparse

import pytest

from minisphere.durability.restores import restore_snapshot
from minisphere.durability.snapshots.layout import list_versions
from minisphere.durability.snapshots.publish import take_snapshot
from minisphere.durability.snapshotter import Backoff, Snapshotter
from minisphere.durability.stores import LocalDirSnapshotStore, S3SnapshotStore
from minisphere.errors import SnapshotStoreUnavailable
from tests.durability.helpers import TcpRelay, count, fill, free_port


def test_closed_port_fails_fast_with_a_named_error(s3_endpoint, tmp_path):
    live = tmp_path / "workspace.db"
    fill(live, ["written locally even with S3 down"])
    store = S3SnapshotStore(
        "nowhere",
        endpoint_url=f"http://127.0.0.1:{free_port()}",
        region="us-east-1",
        connect_timeout_s=0.5,
        max_attempts=2,
    )
    started = time.monotonic()
    with pytest.raises(SnapshotStoreUnavailable, match="cannot reach") as caught:
        take_snapshot(live, store, "ws-down")
    assert time.monotonic() - started < 10
    assert caught.value.code == "snapshot_store_unavailable"
    assert count(live) == 1


def test_missing_bucket_is_unavailable_not_a_crash(s3_endpoint, tmp_path):
    live = tmp_path / "workspace.db"
    fill(live, ["x"])
    store = S3SnapshotStore("no-such-bucket-here", endpoint_url=s3_endpoint, region="us-east-1")
    with pytest.raises(SnapshotStoreUnavailable, match="NoSuchBucket"):
        take_snapshot(live, store, "ws-nobucket")


def test_store_down_then_back(s3_endpoint, fresh_bucket, tmp_path):
    target = urlparse(s3_endpoint)
    relay = TcpRelay(target.hostname, target.port)
    store = S3SnapshotStore(
        fresh_bucket,
        "p/",
        endpoint_url=relay.url,
        region="us-east-1",
        connect_timeout_s=0.5,
        max_attempts=2,
    )
    live = tmp_path / "workspace.db"
    fill(live, ["before the outage"])
    now = [0.0]
    scheduler = Snapshotter(
        lambda reason: take_snapshot(live, store, "ws-flaky", reason=reason),
        every_writes=1,
        every_s=0,
        name="ws-flaky",
        backoff=Backoff(initial_s=10, factor=2, max_s=60, jitter_ratio=0),
        monotonic=lambda: now[0],
    )
    scheduler.note_writes(1)
    assert scheduler.tick() is None  # port closed: recorded, not raised
    status = scheduler.status()
    assert status["consecutiveFailures"] == 1 and status["lastFailureAt"] is not None
    assert status["lastFailureCode"] == "snapshot_store_unavailable"
    assert "cannot reach" in status["lastFailure"] and status["retryInS"] == 10

    relay.start()
    try:
        assert not scheduler.due()  # backing off
        now[0] += 10.5
        manifest = scheduler.tick()
        assert manifest is not None and manifest["entryCount"] == 1
        status = scheduler.status()
        assert status["consecutiveFailures"] == 0 and status["lastVersion"] == manifest["version"]
        assert status["pendingWrites"] == 0 and status["failures"] == 1

        relay.stop()  # down again, for a restore
        with pytest.raises(SnapshotStoreUnavailable):
            restore_snapshot(store, "ws-flaky", tmp_path / "b" / "workspace.db")
        relay.start()
        restore_snapshot(store, "ws-flaky", tmp_path / "b" / "workspace.db")
        assert count(tmp_path / "b" / "workspace.db") == 1
        assert len(list_versions(store, "ws-flaky")) == 1
    finally:
        relay.stop()


def test_backoff_grows_and_caps():
    backoff = Backoff(initial_s=1, factor=2, max_s=10, jitter_ratio=0)
    assert [backoff.delay_s(n) for n in (1, 2, 3, 4, 5, 9)] == [1, 2, 4, 8, 10, 10]
    jittery = Backoff(initial_s=100, factor=1, max_s=1000, jitter_ratio=0.1)
    assert all(90 <= jittery.delay_s(1) <= 110 for _ in range(50))


def test_a_store_that_keeps_failing_is_retried_on_a_growing_backoff_until_it_is_back(tmp_path):
    """The retry production has (the Snapshotter's own; nothing else retries snapshots):
    each failure is recorded, the next try waits out a growing backoff, and the first
    success clears the failures. The store fails for real: its folder is a file."""
    live = tmp_path / "workspace.db"
    fill(live, ["written while the store is broken"])
    root = tmp_path / "snapshots"
    root.write_text("a file where the store's folder should be")
    store = LocalDirSnapshotStore(root)
    now = [0.0]
    snapshotter = Snapshotter(
        lambda reason: take_snapshot(live, store, "ws-broken", reason=reason),
        every_writes=1,
        every_s=0,
        name="ws-broken",
        backoff=Backoff(initial_s=1, factor=2, max_s=10, jitter_ratio=0),
        monotonic=lambda: now[0],
    )
    snapshotter.note_writes(1)
    waits = []
    for failures in (1, 2, 3):
        assert snapshotter.tick() is None  # recorded, not raised
        status = snapshotter.status()
        assert status["consecutiveFailures"] == failures
        assert status["lastFailureCode"] == "snapshot_store_unavailable"
        waits.append(status["retryInS"])
        assert not snapshotter.due()  # backing off: no attempt yet
        now[0] += status["retryInS"]
    assert waits == [1, 2, 4]
    root.unlink()  # the store is back
    manifest = snapshotter.tick()
    assert manifest is not None and manifest["entryCount"] == 1
    status = snapshotter.status()
    assert (status["consecutiveFailures"], status["failures"], status["retryInS"]) == (0, 3, None)
    assert status["pendingWrites"] == 0
    assert list_versions(store, "ws-broken") == [manifest["version"]]


def test_scheduler_triggers_by_writes_and_by_time(tmp_path, local_store):
    live = tmp_path / "workspace.db"
    fill(live, ["a"])
    now = [0.0]
    scheduler = Snapshotter(
        lambda r: take_snapshot(live, local_store, "ws-t", reason=r),
        every_writes=3,
        every_s=60,
        monotonic=lambda: now[0],
    )
    assert not scheduler.due()  # nothing written
    scheduler.note_writes(2)
    assert not scheduler.due()
    scheduler.note_writes(1)
    assert scheduler.tick()["reason"] == "periodic"
    scheduler.note_writes(1)
    assert not scheduler.due()
    now[0] += 61
    assert scheduler.due() and scheduler.tick() is not None
    assert scheduler.status()["snapshots"] == 2


def test_background_thread_snapshots_on_its_own(tmp_path, local_store):
    live = tmp_path / "workspace.db"
    fill(live, ["a"])
    scheduler = Snapshotter(
        lambda r: take_snapshot(live, local_store, "ws-bg", reason=r),
        every_writes=1,
        every_s=0,
        poll_s=0.05,
    ).start()
    try:
        scheduler.note_writes(1)
        deadline = time.monotonic() + 10
        while scheduler.status()["snapshots"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        scheduler.close()
    assert len(list_versions(local_store, "ws-bg")) == 1
