"""The Litestream daemon under the hosts: a checkpoint before it read the frames skips nothing, a
daemon that dies or is too busy to answer is started again (never twice) and the replica catches
up, the node sweep lets it go of files no host holds, a status never waits for it, and a torn
local history starts the replica over."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from minisphere.durability.replication.daemon import LitestreamDaemon
from minisphere.durability.replication.restore import restore_from_replica
from minisphere.engine.location import inspect_copy
from minisphere.engine.workspace import Workspace
from minisphere.errors import ReplicationUnconfirmed
from minisphere.hosting.host import WorkspaceHost
from minisphere.settings import ReplicationSettings
from tests.durability.replication.replicas import (
    forget,
    host_on,
    needs_litestream,
    replica_count,
    until,
    write,
)
from tests.support.hosts import BY_HAND

pytestmark = needs_litestream

HEAVY_WRITERS = 16
HEAVY_WRITES_S = 8.0  # of 16 writers at full speed: many WALs of 1,000 pages


def test_wal_checkpoints_before_the_daemon_read_the_frames_skip_no_transaction(tmp_path, daemon):
    settings = ReplicationSettings(mode="async", sync_timeout_s=5.0)
    host = host_on(tmp_path / "a", tmp_path / "replica", daemon, settings=settings)
    try:
        for round_ in range(3):
            ids = [write(host, f"round {round_} fact {n}")[1]["id"] for n in range(20)]
            assert forget(host, ids[0])  # a forget truncates the WAL at once
            write(host, f"round {round_}: written after the forget")
            with host.workspace.reading() as conn:  # and a checkpoint of our own
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        position = host.workspace.position
        host.replica.confirm()
    finally:
        host.close()
    target = tmp_path / "replicated.db"
    # one history per restart; forgets close together share one (async: one a second)
    assert not host.replica.history_owed and host.replica.number >= 1
    assert restore_from_replica(host.replica.current_url, target)
    assert inspect_copy(target).position == position
    import pysqlite3.dbapi2 as sqlite3

    with sqlite3.connect(target) as conn:
        assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 3 * 20


def test_a_daemon_that_dies_is_started_again_and_the_replica_catches_up(tmp_path, daemon):
    import signal

    host = host_on(tmp_path / "a", tmp_path / "replica", daemon)
    try:
        assert write(host, "before the daemon died")[0]
        os.kill(int((daemon.folder / "litestream.pid").read_text()), signal.SIGKILL)
        ok, result, _ = write(host, "after the daemon died")
        assert ok, result  # confirmed by the daemon started anew
        assert daemon.control.alive()
        assert replica_count(tmp_path / "replica", tmp_path) == 2
    finally:
        host.close()


def test_a_host_opened_after_the_daemon_died_starts_it_and_registers_its_file(tmp_path, daemon):
    import signal

    first = host_on(tmp_path / "a", tmp_path / "replica", daemon)
    assert write(first, "before the daemon died")[0]
    first.close()
    os.kill(int((daemon.folder / "litestream.pid").read_text()), signal.SIGKILL)
    host = host_on(tmp_path / "a", tmp_path / "replica", daemon, epoch=2)
    try:
        assert daemon.control.alive()
        registered = [item.get("path") for item in daemon.control.databases()]
        assert str(host.path) in registered
        assert write(host, "after the daemon was started again")[0]
        assert replica_count(tmp_path / "replica", tmp_path) == 2
    finally:
        host.close()


def test_the_node_sweep_lets_the_daemon_go_of_a_file_no_live_host_holds(tmp_path, daemon):
    """A killed actor never unregisters its file: the daemon went on shipping it, and after a
    delete put the deleted workspace's history back in the store."""
    from minisphere.hosting.copies import sweep_node

    node = tmp_path / "node"
    live = host_on(node, tmp_path / "replica", daemon)  # holds its folder's lock
    orphan = (node / "ws-killed" / "workspace.db").resolve()
    orphan.parent.mkdir(parents=True)
    Workspace(orphan, synchronous="NORMAL").close()
    daemon.ensure_running().register(orphan, (tmp_path / "replica" / "ws-killed").as_uri())
    try:
        registered = {d["path"] for d in daemon.control.databases()}
        assert {str(orphan), str(live.path)} <= registered
        sweep_node(node, "this-node", {}, {}, daemon_dir=str(daemon.folder))
        registered = {d["path"] for d in daemon.control.databases()}
        assert str(orphan) not in registered
        assert str(live.path) in registered  # its host is alive
    finally:
        live.close()


def test_a_replicated_file_leaves_its_checkpoints_to_litestream(tmp_path, daemon):
    """SQLite's own checkpoint at a commit raced Litestream under load; a node killed then
    left a replica that restored to a broken file."""
    host = host_on(tmp_path / "a", tmp_path / "replica", daemon)
    plain = WorkspaceHost("ws-plain", tmp_path / "b" / "ws-plain" / "workspace.db", tuning=BY_HAND)
    try:
        assert write(host, "replicated")[0]
        assert host.workspace.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        assert plain.workspace.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
    finally:
        host.close()
        plain.close()


def test_a_daemon_killed_during_heavy_async_writes_leaves_a_replica_that_restores_whole(
    tmp_path, daemon
):
    """With SQLite's own checkpoints racing Litestream, a daemon killed mid-write left a replica
    whose restore failed its integrity check (every run here): the node's loss then lost the
    workspace, not just its last second."""
    import signal
    import threading

    import pysqlite3.dbapi2 as sqlite3

    settings = ReplicationSettings(mode="async", sync_timeout_s=5.0)
    host = host_on(tmp_path / "a", tmp_path / "replica", daemon, settings=settings)
    stop = threading.Event()

    def keep_writing(k: int) -> None:
        n = 0
        while not stop.is_set():
            assert write(host, f"writer {k} write {n} " + "x" * 300, key=f"{k}-{n}")[0]
            n += 1

    writers = [threading.Thread(target=keep_writing, args=(k,)) for k in range(HEAVY_WRITERS)]
    try:
        for writer in writers:
            writer.start()
        time.sleep(HEAVY_WRITES_S)
        os.kill(int((daemon.folder / "litestream.pid").read_text()), signal.SIGKILL)
        time.sleep(2.0)  # writes go on; the host's confirmations start a daemon again
        stop.set()
        for writer in writers:
            writer.join(60)
        restored = tmp_path / "restored.db"
        assert restore_from_replica((tmp_path / "replica" / "ws-rep").as_uri(), restored)
        with sqlite3.connect(restored) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        stop.set()
        host.close()


def test_a_daemon_too_busy_to_answer_is_waited_for_never_started_twice(
    tmp_path, daemon, monkeypatch
):
    """On a loaded node the daemon may not answer within the liveness timeout: a second daemon
    started beside it would leave the first one shipping files nobody talks to it about (seen
    at load average 50, a new daemon each time one was slow)."""
    import signal

    import minisphere.durability.replication.daemon as daemon_module

    daemon.ensure_running()
    pid = daemon.running_pid()
    assert pid is not None
    monkeypatch.setattr(daemon_module, "DAEMON_START_TIMEOUT_S", 1.0)
    os.kill(pid, signal.SIGSTOP)  # alive, and answering nothing (once the signal landed:
    # it is delivered asynchronously, and a busy daemon answered one more question meanwhile)
    until(lambda: "T (stopped)" in Path(f"/proc/{pid}/status").read_text(), lambda: pid)
    other = LitestreamDaemon(daemon.folder)  # another process of the node
    try:
        with pytest.raises(ReplicationUnconfirmed, match="does not answer"):
            other.ensure_running()
        assert daemon.running_pid() == pid
    finally:
        os.kill(pid, signal.SIGCONT)
    # the daemon just continued may take more than the shortened wait to answer on a busy node
    monkeypatch.undo()
    try:
        assert other.ensure_running().alive()
        assert daemon.running_pid() == pid
    finally:
        other.control.close()


def test_a_status_never_waits_for_a_daemon_that_does_not_answer(tmp_path, daemon):
    """The actor answers status requests on the event loop every call of its workspace runs
    on: a status waiting for a stopped daemon's socket stalled them all."""
    import signal

    from minisphere.durability.litestream_control import CONTROL_TIMEOUT_S

    settings = ReplicationSettings(mode="async", sync_timeout_s=2.0)
    host = host_on(tmp_path / "a", tmp_path / "replica", daemon, settings=settings)
    try:
        assert write(host, "shipped before the daemon stops")[0]
        until(lambda: host.status()["replication"].get("lastSyncAt") is not None, host.status)
        pid = daemon.running_pid()
        os.kill(pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            shown = [host.status()["replication"] for _ in range(3)]
            assert time.monotonic() - started < CONTROL_TIMEOUT_S / 2  # not the socket's wait
            assert shown[-1]["lastSyncAt"] is not None  # the newest reading, kept
        finally:
            os.kill(pid, signal.SIGCONT)
    finally:
        host.close()


def test_a_daemon_whose_local_history_is_torn_starts_the_replica_over_not_503_for_good(
    tmp_path, daemon
):
    """A node where both the writer and the daemon were killed can leave the daemon's local
    history not matching the file: every sync then fails in the file's own step. Retrying
    cannot mend it, so sync mode answered 503 for good; the history must start over."""
    import signal

    host = host_on(tmp_path / "a", tmp_path / "replica", daemon)
    try:
        assert write(host, "shipped before the tear")[0]
        assert write(host, "shipped too")[0]
        history = tmp_path / "a" / "ws-rep" / ".workspace.db-litestream"
        for ltx in history.rglob("*.ltx"):
            ltx.write_bytes(b"")
        os.kill(daemon.running_pid(), signal.SIGKILL)
        ok, result, _ = write(host, "written after the tear")
        assert ok, result
        assert host.replica.number == 1  # started over, in a history of its own
        assert replica_count(tmp_path / "replica", tmp_path, host.replica.current_url) == 3
    finally:
        host.close()
