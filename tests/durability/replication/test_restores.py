"""Restores from the replica: any moment between two writes, exactly the writes before it, the
daemon shipping the restored file afterwards, a `sync` restore answered once the replica holds
it, and a file restored from before a forget going on in the newer history."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from minisphere.durability.replication.restore import restore_from_replica
from minisphere.engine.location import inspect_copy
from minisphere.settings import ReplicationSettings
from tests.durability.replication.replicas import (
    forget,
    host_on,
    host_with_history,
    needs_litestream,
    replica_count,
    until,
    write,
)

pytestmark = needs_litestream


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
