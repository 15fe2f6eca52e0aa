"""A forget with continuous replication leaves no trace in the replica: its history is started
over make-before-break (the new history holds the file before the old one is deleted), once per
owed restart and never two at once, owed again by a process that died mid-restart, and a node
lost before the new history holds the file still restores from the old one."""

from __future__ import annotations

import contextlib

import pytest

from minisphere.durability.replication.registration import WorkspaceReplica
from minisphere.durability.replication.restore import restore_from_replica
from minisphere.engine.location import inspect_copy
from minisphere.errors import ReplicationUnconfirmed
from minisphere.hosting.host import WorkspaceHost
from minisphere.hosting.host_options import KnownState
from minisphere.settings import ReplicationSettings
from tests.durability.replication.replicas import (
    SYNC,
    forget,
    history_url,
    host_on,
    host_with_history,
    host_with_unreachable_replica,
    needs_litestream,
    stored_files_holding,
    until,
    write,
)
from tests.support.hosts import BY_HAND

pytestmark = needs_litestream


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
        return stored_files_holding(tmp_path, secret)

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


def test_a_sync_forget_answered_503_is_acknowledged_by_its_keyed_retry_once_made_before_broken(
    tmp_path, daemon
):
    """Sync mode: a forget is acknowledged only once a new history without its text holds the
    file. While the new history cannot be written the forget answers 503 (committed here, not
    acknowledged) and the old history, text included, stays the replica; the same forget sent
    again with its key is answered once the new history holds the file, the old one deleted."""
    secret = "the retried forget's passphrase is moss-lantern-7731"
    host = host_with_history(tmp_path, daemon)
    try:
        entry = write(host, secret)[1]["id"]
        _store, prefix = host.replica.history
        obstacle = tmp_path / "store" / prefix / "h00000001"
        obstacle.write_bytes(b"")  # a file where the new history's folder would go
        assert not forget(host, entry, key="forget-1")
        assert host.replica.history_owed and stored_files_holding(tmp_path, secret)
        obstacle.unlink()
        until(
            lambda: forget(host, entry, key="forget-1"),
            lambda: f"the keyed retry was never acknowledged: {host.status()['replication']}",
            timeout_s=120,
        )
        assert not host.replica.history_owed and host.replica.number == 1
        assert stored_files_holding(tmp_path, secret) == []
    finally:
        host.close()
