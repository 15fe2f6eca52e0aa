"""What a wake finds with continuous replication: a copy left on a node by an earlier stay is not
opened behind the replica, an unreadable or damaged copy is restored from the replica instead of
opened, the node that held the workspace last opens its own copy, and a hibernation ships the
last writes and tells the directory only what the replica confirmed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from minisphere.settings import ReplicationSettings
from tests.durability.replication.replicas import (
    ASYNC,
    forget,
    host_on,
    host_with_unreachable_replica,
    needs_litestream,
    replica_count,
    write,
)

pytestmark = needs_litestream


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
