"""The hosting layer without Ray: the group-commit writer and the read pool."""

import threading

import pytest

from minisphere import errors as E
from minisphere.engine.clock import ManualClock, iso_utc
from minisphere.engine.workspace import Workspace
from minisphere.hosting.group_commit import GroupCommitWriter
from minisphere.hosting.read_pool import ReadPool


def submit_and_wait(writer, calls):
    done, results = threading.Event(), [None] * len(calls)
    remaining = [len(calls)]
    lock = threading.Lock()

    def callback_for(i):
        def callback(reply):
            results[i] = (*reply, reply.timings)
            with lock:
                remaining[0] -= 1
                if remaining[0] == 0:
                    done.set()

        return callback

    for i, (method, body) in enumerate(calls):
        writer.submit(method, body, callback_for(i))
    assert done.wait(30)
    return results


def test_group_commit_batches_and_isolates_failures(tmp_path):
    ws = Workspace(tmp_path / "w.db", synchronous="NORMAL")
    writer = GroupCommitWriter(ws, max_batch=64)
    calls = [("capture", {"content": f"entry {i}"}) for i in range(200)]
    calls[50] = ("capture", {"content": ""})  # invalid: fails alone
    calls[51] = ("recall", {"query": 5})  # invalid arguments
    results = submit_and_wait(writer, calls)
    assert not results[50][0] and isinstance(results[50][1], E.InvalidArgument)
    assert not results[51][0]
    ok = [r for r in results if r[0]]
    assert len(ok) == 198
    assert all({"queue_ms", "engine_ms", "batch"} <= set(r[2]) for r in results)
    assert writer.batches < 200 and writer.largest_batch > 1
    writer.close()
    assert ws.get_count() == {"count": 198}
    ws.close()


def test_group_commit_survives_an_unexpected_error(tmp_path, monkeypatch):
    ws = Workspace(tmp_path / "w.db", synchronous="NORMAL")
    real = ws.run_batch

    def flaky(calls, prepared=None):
        calls = list(calls)
        if any(call[1].get("content") == "boom" for call in calls):
            raise RuntimeError("unexpected")
        return real(calls, prepared)

    monkeypatch.setattr(ws, "run_batch", flaky)
    writer = GroupCommitWriter(ws, max_batch=64)
    results = submit_and_wait(writer, [("capture", {"content": c}) for c in ("a", "boom", "b")])
    assert [r[0] for r in results] == [True, False, True]
    writer.close()
    assert ws.get_count() == {"count": 2}
    ws.close()


def test_read_pool_sees_acknowledged_writes(tmp_path):
    ws = Workspace(tmp_path / "w.db", synchronous="NORMAL")
    pool = ReadPool(tmp_path / "w.db", threads=2)
    stored = ws.capture("hello")
    result, timings = pool.submit("getEntry", {"id": stored["id"]}).result()
    assert result["content"] == "hello" and "engine_ms" in timings
    with pytest.raises(E.NotFound):
        pool.read("capture", {"content": "no writes here"})
    pool.close()
    ws.close()


def test_read_follow_ups_go_to_the_writer(tmp_path):
    ws = Workspace(tmp_path / "w.db", synchronous="NORMAL")
    writer = GroupCommitWriter(ws)
    handed = []

    def follow_up(method, body):
        handed.append(method)
        writer.submit(method, body, lambda *_: None)

    pool = ReadPool(tmp_path / "w.db", on_follow_up=follow_up)
    entry_id = ws.capture("sqlite is an embedded database")["id"]
    result, _ = pool.read("recall", {"query": "embedded database"})
    assert [item["id"] for item in result["items"]] == [entry_id]
    writer.close()  # drains the queued follow-up
    assert handed == ["noteRecalled"]
    assert ws.get_entry(entry_id)["recallCount"] == 1
    pool.close()
    ws.close()


def test_failure_after_commit_is_not_applied_twice(tmp_path):
    """The hooks' after-commit step raising must not make the writer re-run committed calls
    one by one (appends twice, extra revisions, callers told it failed)."""
    from tests.engine.vectors.helpers import ChosenVectors

    ws = Workspace(tmp_path / "w.db", synchronous="NORMAL", embedder=ChosenVectors({}))
    entry = ws.capture("the base fact")["id"]

    def broken_after_commit():
        raise RuntimeError("index refresh failed after the commit")

    ws.vectors.after_commit = broken_after_commit
    writer = GroupCommitWriter(ws, max_batch=64)
    results = submit_and_wait(
        writer, [("append", {"id": entry, "addition": f"line {i}"}) for i in range(3)]
    )
    writer.close()
    assert all(ok for ok, _, _ in results)
    content = ws.get_entry(entry)["content"]
    assert [content.count(f"line {i}") for i in range(3)] == [1, 1, 1]
    revisions = ws.conn.execute(
        "SELECT COUNT(*) FROM revisions WHERE entry_id = ?", (entry,)
    ).fetchone()[0]
    assert revisions == 3
    ws.close()


def test_keyed_write_queued_twice_is_applied_once_and_flagged_replayed(tmp_path):
    ws = Workspace(tmp_path / "w.db", synchronous="NORMAL")
    entry = ws.capture("queued twice")["id"]
    writer = GroupCommitWriter(ws, max_batch=64)
    done, results = threading.Event(), []

    def callback(reply):
        results.append((*reply, reply.timings))
        if len(results) == 2:
            done.set()

    for _ in range(2):  # a caller that timed out sends it again while the first is queued
        writer.submit("append", {"id": entry, "addition": "once"}, callback, key="retry-1")
    assert done.wait(30)
    writer.close()
    assert [r[0] for r in results] == [True, True]
    assert [r[2]["replayed"] for r in results] == [False, True]
    assert ws.get_entry(entry)["content"].count("once") == 1
    ws.close()


def test_reads_as_of_a_moment_run_on_the_read_pools_read_only_connection(tmp_path):
    clock = ManualClock()
    ws = Workspace(tmp_path / "w.db", clock=clock, synchronous="NORMAL")
    pool = ReadPool(tmp_path / "w.db", clock=clock)
    entry_id = ws.capture("sqlite is an embedded database")["id"]
    moment = iso_utc(clock.advance(seconds=5))
    clock.advance(seconds=5)
    ws.update(entry_id, "sqlite is a library")
    recalled, _ = pool.read("recall", {"query": "embedded database", "asOf": moment})
    assert [item["content"] for item in recalled["items"]] == ["sqlite is an embedded database"]
    listed, _ = pool.read("listRecent", {"asOf": moment})
    entry, _ = pool.read("getEntry", {"id": entry_id, "asOf": moment})
    assert listed["items"][0]["content"] == entry["content"] == "sqlite is an embedded database"
    pool.close()
    ws.close()


@pytest.mark.parametrize("asked_by", ["work still owed", "confirm_soon"])
def test_an_async_confirmation_owed_runs_again_without_waiting_for_the_next_write(
    tmp_path, asked_by
):
    """Async replication confirms behind the answers, after a write. A forget's history restart
    that did not finish at its confirmation (the new history's upload not confirmed yet), or
    that was asked for after it, was left until the next write: with none, the old history kept
    the forgotten text for good. It is confirmed again each interval while owed, and at once
    when asked."""
    ws = Workspace(tmp_path / "w.db", synchronous="NORMAL")
    owed = threading.Event()
    owed.set()
    confirmations = threading.Semaphore(0)
    finish_at = 3 if asked_by == "work still owed" else 2

    def confirm():
        confirmations.release()
        count[0] += 1
        if count[0] >= finish_at:
            owed.clear()  # the restart finished at last

    count = [0]
    writer = GroupCommitWriter(
        ws,
        confirm=confirm,
        answer_first=True,
        confirm_every_s=0.05,
        owes_confirm=owed.is_set if asked_by == "work still owed" else None,
    )
    try:
        submit_and_wait(writer, [("capture", {"content": "the only write"})])
        assert confirmations.acquire(timeout=30)  # the write's own confirmation
        if asked_by == "confirm_soon":
            writer.confirm_soon()
        for _ in range(finish_at - 1):  # and the ones owed, with nothing more committed
            assert confirmations.acquire(timeout=30)
        assert not owed.is_set()
    finally:
        writer.close()
        ws.close()
