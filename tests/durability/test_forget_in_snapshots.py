"""What `forget` guarantees about snapshots: a snapshot taken after the forget does not hold
the forgotten text (snapshots carry no free pages); those taken before it are deleted by the
snapshotter's next round or at hibernation, once a version of the state after the forget is
stored; and pruning leaves the store, the data folder and a restored file without it."""

import contextlib
import gzip
from concurrent.futures import Future
from pathlib import Path

from minisphere.durability.snapshots.layout import list_versions
from minisphere.hosting.host import WorkspaceHost
from tests.support.hosts import BY_HAND

SECRET = b"quetzal-cipher-58821"


def call(host, method, body):
    future = Future()
    host.calls.submit_write(method, body, future.set_result)
    return future.result(timeout=30).unwrap()


def holding_secret(folder: Path) -> list[str]:
    """Every file under `folder` whose bytes (decompressed, for .gz) contain the secret."""
    found = []
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if path.suffix == ".gz":
                data = gzip.decompress(data)
            if SECRET in data:
                found.append(str(path.relative_to(folder)))
    return sorted(found)


def test_forget_then_snapshot_then_restore_leaves_the_text_in_no_file(tmp_path, local_store):
    host = WorkspaceHost(
        "ws-f", tmp_path / "workspaces" / "ws-f" / "workspace.db", store=local_store, tuning=BY_HAND
    )
    for i in range(30):
        call(host, "capture", {"content": f"an unrelated note {i}"})
    secret = call(host, "capture", {"content": f"the door code is {SECRET.decode()}"})["id"]
    call(host, "update", {"id": secret, "content": f"door code {SECRET.decode()}, rotated"})
    before = host.states.snapshot_now()["version"]  # taken before the forget: holds it
    call(host, "forget", {"id": secret})
    after = host.states.snapshot_now()["version"]
    assert holding_secret(tmp_path / "snapshots") == [f"ws-f/{before}.db.gz"]
    pruned = host.states.prune_snapshots(keep=1)
    assert pruned["deleted"] == [before] and pruned["kept"] == [after]
    host.states.restore(after)
    assert holding_secret(tmp_path) == []  # live file, WAL, aside copy, store
    assert host.calls.submit_read("getCount", {}).result(30)[0]["count"] == 30
    host.close()
    assert holding_secret(tmp_path) == []


def test_prune_takes_a_snapshot_first_when_the_file_changed(tmp_path, local_store):
    host = WorkspaceHost("ws-p", tmp_path / "ws-p.db", store=local_store, tuning=BY_HAND)
    call(host, "capture", {"content": "one"})
    host.states.snapshot_now()
    call(host, "capture", {"content": "two"})
    pruned = host.states.prune_snapshots(keep=1)
    assert pruned["snapshot"]["entryCount"] == 2 and pruned["kept"] == [
        pruned["snapshot"]["version"]
    ]
    again = host.states.prune_snapshots(keep=1)  # nothing changed: nothing taken
    assert again["snapshot"] is None and again["deleted"] == []
    host.close()


def secret_then_snapshot(tmp_path, local_store, name: str):
    host = WorkspaceHost(
        name, tmp_path / "workspaces" / name / "workspace.db", store=local_store, tuning=BY_HAND
    )
    call(host, "capture", {"content": "a note that stays"})
    secret = call(host, "capture", {"content": f"the door code is {SECRET.decode()}"})["id"]
    before = host.states.snapshot_now()["version"]
    return host, secret, before


def test_a_forget_deletes_the_versions_taken_before_it_within_one_round(tmp_path, local_store):
    """A snapshot from before a forget used to keep its text until an admin pruned; the
    snapshotter's next round now stores the state after the forget and deletes the older."""
    host, secret, before = secret_then_snapshot(tmp_path, local_store, "ws-round")
    call(host, "forget", {"id": secret})
    host.snapshotter.tick()
    versions = list_versions(local_store, "ws-round")
    assert before not in versions and len(versions) == 1
    assert holding_secret(tmp_path / "snapshots") == []
    host.states.restore(versions[0])
    assert host.calls.submit_read("getCount", {}).result(30)[0]["count"] == 1
    host.close()


def test_a_version_taken_after_the_forget_is_kept_and_spares_a_new_one(tmp_path, local_store):
    host, secret, _before = secret_then_snapshot(tmp_path, local_store, "ws-after")
    call(host, "forget", {"id": secret})
    after = host.states.snapshot_now()["version"]
    host.snapshotter.tick()
    assert list_versions(local_store, "ws-after") == [after]
    host.close()


def test_a_hibernation_right_after_a_forget_pays_the_owed_deletion(tmp_path, local_store):
    host, secret, before = secret_then_snapshot(tmp_path, local_store, "ws-sleep")
    call(host, "forget", {"id": secret})
    hibernated = host.hibernate()
    assert hibernated["error"] is None
    assert before not in list_versions(local_store, "ws-sleep")
    assert holding_secret(tmp_path / "snapshots") == []


def copies_of(texts: list[str], *files: Path) -> dict[str, int]:
    blob = b"".join(path.read_bytes() for path in files if path.exists())
    return {text: blob.count(text.encode()) for text in texts}


def filled_workspace(path: Path, count: int = 80) -> list[str]:
    """A closed workspace file whose entries table spans many pages; the entries' texts."""
    from minisphere.engine.workspace import Workspace

    workspace = Workspace(path)
    texts = [f"note {n} about the harbor ledger, nonce nz{n:04d}q{'x' * 60}" for n in range(count)]
    for text in texts:
        workspace.call("capture", {"content": text})
    workspace.close()
    return texts


def test_a_snapshot_holds_no_second_copy_of_any_row(tmp_path):
    """Built by VACUUM INTO, a copy grows its b-trees page by page: without secure_delete on the
    connection that builds it, rows moved off a page leave old bytes in that page's gap."""
    from minisphere.durability.snapshots.packing import compacted_copy

    live = tmp_path / "live.db"
    texts = filled_workspace(live)
    compacted_copy(live, tmp_path / "copy.db")
    assert copies_of(texts, tmp_path / "copy.db") == copies_of(texts, live)


def test_a_forget_in_a_file_restored_from_an_older_snapshot_leaves_no_copy(tmp_path):
    """A file restored from a snapshot taken before snapshots set secure_delete holds second
    copies of rows; forgetting one of them must leave it in no page."""
    import pysqlite3.dbapi2 as sqlite3

    from minisphere.engine.scrub import CLEAN_KEY
    from minisphere.engine.workspace import Workspace

    live = tmp_path / "live.db"
    texts = filled_workspace(live)
    old_style = tmp_path / "restored.db"
    with contextlib.closing(sqlite3.connect(live)) as conn:  # secure_delete off
        conn.execute("VACUUM INTO ?", (str(old_style),))
    with contextlib.closing(sqlite3.connect(old_style)) as conn:  # as files were before the mark
        conn.execute("DELETE FROM workspace_meta WHERE key = ?", (CLEAN_KEY,))
        conn.commit()
    before, clean = copies_of(texts, old_style), copies_of(texts, live)
    doubled = [text for text in texts if before[text] > clean[text]]
    assert doubled, "the old-style copy holds no second copy: this test would prove nothing"
    workspace = Workspace(old_style)
    ids = {
        item["content"]: item["id"]
        for item in workspace.call("listRecent", {"n": len(texts)})["items"]
    }
    for text in doubled:
        workspace.call("forget", {"id": ids[text]})
    workspace.close()
    wal = old_style.with_name(old_style.name + "-wal")
    assert {text: n for text, n in copies_of(doubled, old_style, wal).items() if n} == {}


def test_a_forget_whose_process_died_before_the_purge_has_it_paid_at_the_next_open(
    tmp_path, local_store
):
    """The deletion of the versions taken before a forget was owed only in the process's
    memory: one killed before it ran left the forgotten text in those versions for good, and
    a restore of one brought it back. The forget's transaction records it owed in the file."""
    path = tmp_path / "workspaces" / "ws-k" / "workspace.db"
    host = WorkspaceHost("ws-k", path, store=local_store, tuning=BY_HAND)
    call(host, "capture", {"content": "a note that stays"})
    secret = call(host, "capture", {"content": f"the vault code is {SECRET.decode()}"})["id"]
    host.states.snapshot_now()  # taken before the forget: holds it
    call(host, "forget", {"id": secret})
    host._close_io()  # killed before its snapshotter ran
    host._lock.release()
    assert holding_secret(tmp_path / "snapshots")

    again = WorkspaceHost("ws-k", path, store=local_store, tuning=BY_HAND)
    again.hibernate()
    assert holding_secret(tmp_path) == []
    versions = list_versions(local_store, "ws-k")
    assert len(versions) == 1  # the state after the forget, stored
