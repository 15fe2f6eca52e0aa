"""A workspace lives in one place: the host opens a copy only when it belongs to the current
creation of the id and reaches the newest acknowledged position; otherwise it deletes it and
restores from the store, or refuses with a named error. Two folders stand for two nodes' disks
sharing one snapshot store."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import pytest

from minisphere.engine.clock import ManualClock
from minisphere.engine.idempotency import IDEMPOTENCY_KEEP_MS
from minisphere.engine.location import inspect_copy
from minisphere.engine.workspace import Workspace
from minisphere.errors import WorkspaceDataMissing, WorkspaceFenced
from minisphere.hosting.copies import HostLock, sweep_node
from minisphere.hosting.host import WorkspaceHost
from minisphere.hosting.host_options import KnownState
from tests.support.hosts import BY_HAND

SECRET = "the vault passphrase is plum-otter-4471"


def host_on(node: Path, store, **known) -> WorkspaceHost:
    return WorkspaceHost(
        "ws-loc",
        node / "ws-loc" / "workspace.db",
        store=store,
        known=KnownState(**known),
        tuning=BY_HAND,
    )


def write(host, method, body, key=None):
    future = Future()
    host.calls.submit_write(method, body, future.set_result, key=key)
    return future.result(timeout=30).unwrap()


def count(host) -> int:
    return host.calls.submit_read("getCount", {}).result(timeout=30)[0]["count"]


def bytes_under(folder: Path, needle: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_a_recreated_id_never_opens_the_deleted_creations_file(tmp_path, local_store):
    old = host_on(tmp_path / "b", local_store, generation="gen-old", epoch=1)
    write(old, "capture", {"content": SECRET})
    old.close()  # the node kept its file; the id was deleted
    new = host_on(tmp_path / "b", local_store, generation="gen-new", epoch=1)
    try:
        assert new.activation["source"] == "new"
        assert "deleted creation" in new.activation["discarded"]
        assert count(new) == 0
        assert (
            new.calls.submit_read("recall", {"query": "vault passphrase"}).result()[0]["items"]
            == []
        )
    finally:
        new.close()
    assert bytes_under(tmp_path / "b", SECRET) == []


def test_moving_back_to_a_node_with_a_stale_copy_restores_the_newest_state(tmp_path, local_store):
    a = host_on(tmp_path / "a", local_store, generation="g", epoch=1)
    write(a, "capture", {"content": "first fact"})
    left_a = a.hibernate()  # snapshot: the store reaches this position
    b = host_on(
        tmp_path / "b",
        local_store,
        generation="g",
        epoch=2,
        position=left_a["position"],
        expect_snapshot=True,
    )
    assert b.activation["source"] == "snapshot"
    write(b, "capture", {"content": "second fact, written on b"})
    left_b = b.hibernate()
    assert left_b["position"] > left_a["position"]
    back = host_on(
        tmp_path / "a",
        local_store,
        generation="g",
        epoch=3,
        position=left_b["position"],
        expect_snapshot=True,
    )
    try:
        assert "stale" in back.activation["discarded"]
        assert back.activation["source"] == "snapshot"
        assert count(back) == 2  # was 1: the stale local copy was opened
    finally:
        back.close()


def test_a_copy_older_than_the_acknowledged_position_is_refused_not_opened(tmp_path, local_store):
    a = host_on(tmp_path / "a", local_store, generation="g", epoch=1)
    write(a, "capture", {"content": "snapshotted fact"})
    a.states.snapshot_now()
    for i in range(3):
        write(a, "capture", {"content": f"acknowledged after the snapshot {i}"})
    acknowledged = a.position()
    a.close()  # then node a is lost with its disk
    with pytest.raises(WorkspaceDataMissing, match=f"position {acknowledged}"):
        host_on(
            tmp_path / "b",
            local_store,
            generation="g",
            epoch=2,
            position=acknowledged,
            expect_snapshot=True,
        )
    assert not (tmp_path / "b" / "ws-loc" / "workspace.db").exists()


def test_a_lost_file_with_acknowledged_writes_and_no_snapshot_is_not_opened_empty(
    tmp_path, local_store
):
    with pytest.raises(WorkspaceDataMissing):
        host_on(tmp_path / "a", local_store, generation="g", epoch=2, position=300)


def test_an_owner_replaced_by_a_newer_epoch_writes_nothing(tmp_path, local_store):
    first = host_on(tmp_path / "shared", local_store, generation="g", epoch=1)
    write(first, "capture", {"content": "written by the first owner"})
    first._lock.release()  # the shared disk's lock aside: fencing alone
    second = host_on(tmp_path / "shared", local_store, generation="g", epoch=2)
    try:
        with pytest.raises(WorkspaceFenced):
            write(first, "capture", {"content": "a write from the replaced owner"})
        assert count(second) == 1
        second._lock.release()
        with pytest.raises(WorkspaceFenced):  # and an older epoch cannot open it again
            host_on(tmp_path / "shared", local_store, generation="g", epoch=1)
    finally:
        first.close()
        second.close()


def test_forget_reaches_idempotency_answers_restore_asides_and_export_copies(tmp_path, local_store):
    host = host_on(tmp_path / "a", local_store, generation="g", epoch=1)
    entry = write(host, "capture", {"content": "a harmless note"})["id"]
    write(host, "update", {"id": entry, "content": SECRET}, key="update-1")
    version = host.states.snapshot_now()["version"]
    host.states.restore(version)  # leaves a pre-restore copy beside the file
    leftover = host.path.parent / ".export-abandoned.db"
    leftover.write_bytes(SECRET.encode())  # an export nobody finished
    assert bytes_under(tmp_path / "a", SECRET)
    write(host, "forget", {"id": entry})
    with pytest.raises(Exception, match="was forgotten since"):
        write(host, "update", {"id": entry, "content": SECRET}, key="update-1")
    host.close()
    assert bytes_under(tmp_path / "a", SECRET) == []


def test_expired_idempotency_answers_leave_the_file_and_its_snapshots(tmp_path, local_store):
    clock = ManualClock()
    ws = Workspace(tmp_path / "w.db", clock=clock)
    entry = ws.capture("note")["id"]
    ws.call("update", {"id": entry, "content": SECRET}, idempotency_key="k")
    ws.call("update", {"id": entry, "content": "rewritten"})
    clock.advance(ms=IDEMPOTENCY_KEEP_MS + 1)
    ws.capture("a later keyless write")  # prunes expired keys, keyed or not
    assert ws.conn.execute("SELECT count(*) FROM idempotency_keys").fetchone()[0] == 0
    ws.close()


def test_the_node_sweep_deletes_dead_and_moved_copies_but_never_a_held_one(tmp_path):
    root = tmp_path / "workspaces"
    for name, generation in [
        ("dead", "g-dead"),
        ("moved", "g1"),
        ("held", "g-dead"),
        ("current", "g2"),
    ]:
        (root / name).mkdir(parents=True)
        ws = Workspace(root / name / "workspace.db")
        ws.claim(generation, 1)
        ws.capture(SECRET)
        ws.close()
    lock = HostLock(root / "held")
    try:
        deleted = sweep_node(
            root,
            "node-a",
            {"dead": ["g-dead"], "held": ["g-dead"]},
            {"moved": ("g1", "node-b", 10), "current": ("g2", "node-a", 10)},
        )
    finally:
        lock.release()
    assert sorted(deleted) == ["dead", "moved"]
    assert not (root / "dead").exists()
    assert inspect_copy(root / "moved" / "workspace.db") is None
    assert inspect_copy(root / "held" / "workspace.db") is not None
    assert inspect_copy(root / "current" / "workspace.db") is not None


def test_a_fenced_host_drops_expired_idempotency_keys_when_it_opens_the_file(tmp_path):
    # the claim and the pruning share one commit on every open; pruning must not be lost
    path = tmp_path / "a" / "ws-loc" / "workspace.db"
    path.parent.mkdir(parents=True)
    clock = ManualClock(start_ms=1_000_000)  # long before the host's own clock
    ws = Workspace(path, clock=clock)
    ws.claim("g1", 1)
    ws.call("capture", {"content": "keyed"}, idempotency_key="old-key")
    ws.close()
    host = host_on(tmp_path / "a", None, generation="g1", epoch=2)
    try:
        kept = host.workspace.conn.execute("SELECT count(*) FROM idempotency_keys").fetchone()[0]
        assert kept == 0 and inspect_copy(path).epoch == 2
    finally:
        host.close()


def _unclaimed_copy(folder: Path, content: str) -> Path:
    """A file with no generation: made before generations, or by an offline import."""
    path = folder / "workspace.db"
    path.parent.mkdir(parents=True)
    ws = Workspace(path)
    ws.capture(content)
    ws.close()
    assert inspect_copy(path).generation is None
    return path


def test_a_recreated_id_never_opens_a_copy_without_a_generation(tmp_path, local_store):
    path = _unclaimed_copy(tmp_path / "b" / "ws-loc", SECRET)
    new = host_on(tmp_path / "b", local_store, generation="gen-new", epoch=1)
    try:
        assert new.activation["source"] == "new"
        assert count(new) == 0
        assert (
            new.calls.submit_read("recall", {"query": "vault passphrase"}).result()[0]["items"]
            == []
        )
    finally:
        new.close()
    assert bytes_under(tmp_path / "b", SECRET) == []
    assert inspect_copy(path).generation == "gen-new"


@pytest.mark.parametrize("dead", ["", "g-deleted"])
def test_the_node_sweep_deletes_a_copy_without_a_generation_of_a_deleted_id(tmp_path, dead):
    root = tmp_path / "workspaces"
    _unclaimed_copy(root / "gone", SECRET)
    _unclaimed_copy(root / "never-deleted", "an offline import nobody deleted")
    assert sweep_node(root, "node-a", {"gone": [dead]}, {}) == ["gone"]
    assert not (root / "gone").exists()
    assert inspect_copy(root / "never-deleted" / "workspace.db") is not None


def test_an_unreadable_local_file_is_restored_from_the_store_not_a_500(tmp_path, local_store):
    first = host_on(tmp_path / "a", local_store, generation="g", epoch=1)
    for i in range(25):
        write(first, "capture", {"content": f"captured before the disk broke {i}"})
    left = first.hibernate()
    first.path.write_bytes(b"garbage, not a database " * 512)
    again = host_on(
        tmp_path / "a",
        local_store,
        generation="g",
        epoch=2,
        position=left["position"],
        expect_snapshot=True,
    )
    try:
        assert again.activation["source"] == "snapshot"
        assert "unreadable" in again.activation["discarded"]
        assert count(again) == 25
    finally:
        again.close()
    assert sorted(p.name for p in (tmp_path / "a" / "ws-loc").glob("workspace.db*")) == [
        "workspace.db"
    ]


def test_an_unreadable_local_file_nothing_restores_is_refused_and_kept(tmp_path):
    path = tmp_path / "a" / "ws-loc" / "workspace.db"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"garbage, not a database " * 512)
    with pytest.raises(WorkspaceDataMissing, match="unreadable"):
        host_on(tmp_path / "a", None, generation="g", epoch=1)
    assert path.read_bytes().startswith(b"garbage")  # never replaced by an empty file


def test_a_host_whose_file_vanished_after_it_was_found_opens_nothing_empty(tmp_path, local_store):
    first = host_on(tmp_path / "a", local_store, generation="g", epoch=1)
    write(first, "capture", {"content": "acknowledged"})
    first.hibernate()
    again = host_on(tmp_path / "a", local_store, generation="g", epoch=2)
    assert again.activation["source"] == "local"
    again._close_io()
    for suffix in ("", "-wal", "-shm"):  # gone between finding and opening
        Path(f"{again.path}{suffix}").unlink(missing_ok=True)
    with pytest.raises(WorkspaceDataMissing):
        again._open()
    assert not again.path.exists()  # no empty file in its place
    again.close()


def test_what_a_killed_restore_staged_is_deleted_by_the_next_host_and_the_sweep(
    tmp_path, local_store
):
    def leave_staging(folder: Path) -> None:
        (folder / ".restore-killed").mkdir(parents=True)
        (folder / ".restore-killed" / "moment.db").write_bytes(SECRET.encode())
        (folder / "workspace.db.from-replica").write_bytes(SECRET.encode())

    first = host_on(tmp_path / "a", local_store, generation="g", epoch=1)
    first.hibernate()
    leave_staging(tmp_path / "a" / "ws-loc")
    again = host_on(tmp_path / "a", local_store, generation="g", epoch=2)
    try:
        assert bytes_under(tmp_path / "a", SECRET) == []
    finally:
        again.close()
    leave_staging(tmp_path / "a" / "ws-loc")
    sweep_node(tmp_path / "a", "node-a", {}, {})
    assert bytes_under(tmp_path / "a", SECRET) == []
