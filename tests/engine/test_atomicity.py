"""A failure in the middle of a multi-statement write leaves nothing half-done, and group commit
(`run_batch`) isolates each call under its own savepoint."""

import pytest

from minisphere.engine import db
from minisphere.engine.clock import ManualClock
from minisphere.engine.workspace import Workspace
from minisphere.errors import InvalidArgument, NotFound, SelfLink
from tests.engine.helpers import fts_ids, fts_rowcount, snapshot


def add_failing_trigger(ws, name, when_sql, table, condition="1"):
    ws.conn.execute(
        f"CREATE TRIGGER {name} {when_sql} ON {table} WHEN {condition} "
        f"BEGIN SELECT RAISE(ABORT, 'injected failure in {table}'); END"
    )


def test_capture_failing_on_tags_insert_leaves_no_entry(ws):
    ws.capture("an earlier entry", tags=["old"])
    add_failing_trigger(ws, "fail_tags", "BEFORE INSERT", "tags")
    before = snapshot(ws)
    with pytest.raises(db.IntegrityError, match="injected failure in tags"):
        ws.capture("the quokkas entry that must vanish", tags=["new"])
    assert snapshot(ws) == before
    assert (
        ws.conn.execute("SELECT COUNT(*) FROM entries WHERE content LIKE '%quokkas%'").fetchone()[0]
        == 0
    )
    assert fts_rowcount(ws, "quokkas") == 0
    # the workspace stays usable: no transaction was left open
    assert not ws.conn.in_transaction
    assert ws.capture("captured without tags")["outcome"] == "stored"


def test_capture_failing_after_the_fts_trigger_rolls_back_the_index(ws):
    # fails after the entries row and its FTS row were written (AFTER INSERT, fires last)
    add_failing_trigger(
        ws, "fail_entries", "AFTER INSERT", "entries", "new.content LIKE '%wombat%'"
    )
    before = snapshot(ws)
    with pytest.raises(db.IntegrityError):
        ws.capture("wombat notes")
    assert snapshot(ws) == before
    assert fts_rowcount(ws, "wombat") == 0


def test_append_failing_on_revision_insert_changes_nothing(ws, clock):
    entry_id = ws.capture("The original narwhal text", tags=["sea"])["id"]
    add_failing_trigger(ws, "fail_revisions", "BEFORE INSERT", "revisions")
    before = snapshot(ws)
    clock.advance(seconds=10)
    with pytest.raises(db.IntegrityError, match="injected failure in revisions"):
        ws.append(entry_id, "an addition about walruses", tags=["arctic"], importance=0.9)
    assert snapshot(ws) == before
    entry = ws.get_entry(entry_id)
    assert entry["content"] == "The original narwhal text"
    assert entry["tags"] == ["sea"] and entry["importance"] == 0.0
    assert entry["updatedAt"] == entry["createdAt"]
    assert fts_ids(ws, "narwhal") == [entry_id] and fts_rowcount(ws, "walruses") == 0


def test_append_failing_on_the_last_statement_changes_nothing(ws):
    """The tags insert is the last statement of append: everything before it must roll back."""
    entry_id = ws.capture("capybara baseline")["id"]
    add_failing_trigger(ws, "fail_tags", "BEFORE INSERT", "tags")
    before = snapshot(ws)
    with pytest.raises(db.IntegrityError):
        ws.append(entry_id, "capybara addendum", tags=["t"], source="late", claim_tag="VERIFIED")
    assert snapshot(ws) == before
    assert fts_rowcount(ws, "addendum") == 0


def test_update_failing_on_entries_update_keeps_no_revision(ws):
    entry_id = ws.capture("ocelot draft")["id"]
    add_failing_trigger(ws, "fail_update", "BEFORE UPDATE", "entries")
    before = snapshot(ws)
    with pytest.raises(db.IntegrityError):
        ws.update(entry_id, "ocelot final")
    assert snapshot(ws) == before
    assert ws.get_entry(entry_id)["revisionCount"] == 0


def test_forget_failing_during_cascade_keeps_everything(ws):
    target = ws.capture("pangolin to forget", tags=["p"])["id"]
    other = ws.capture("pangolin neighbour")["id"]
    ws.link(target, other, "relates_to")
    ws.append(target, "pangolin appendix")
    add_failing_trigger(ws, "fail_revision_delete", "BEFORE DELETE", "revisions")
    before = snapshot(ws)
    with pytest.raises(db.IntegrityError):
        ws.forget(target)
    assert snapshot(ws) == before
    entry = ws.get_entry(target)
    assert entry["tags"] == ["p"] and entry["edgeCount"] == 1 and entry["revisionCount"] == 1
    assert fts_ids(ws, "appendix") == [target]


def test_link_failing_keeps_existing_edge(ws):
    a, b = ws.capture("edge end a")["id"], ws.capture("edge end b")["id"]
    ws.link(a, b, "supersedes", weight=0.5)
    add_failing_trigger(ws, "fail_edges", "BEFORE UPDATE", "edges")
    before = snapshot(ws)
    with pytest.raises(db.IntegrityError):
        ws.link(a, b, "supersedes", weight=0.9)
    assert snapshot(ws) == before


# ---- group commit ----------------------------------------------------------------------------


def test_run_batch_isolates_failures_and_commits_the_rest(tmp_path):
    path = tmp_path / "batch.db"
    clock = ManualClock()
    ws = Workspace(path, clock=clock, synchronous="NORMAL")
    keep = ws.capture("an entry from before the batch")["id"]
    add_failing_trigger(ws, "poison", "AFTER INSERT", "entries", "new.content = 'poison pill'")
    outcomes = ws.run_batch(
        [
            ("capture", {"content": "batch entry one", "tags": ["batch"]}),
            ("capture", {"content": "   "}),  # invalid argument
            ("capture", {"content": "poison pill", "tags": ["bad"]}),  # database-level failure
            ("capture", {"content": "batch entry two", "tags": ["batch"]}),
            ("link", {"src": keep, "dst": keep, "type": "relates_to"}),  # self link
            ("forget", {"id": "123e4567-e89b-42d3-a456-426614174000"}),  # not found
            ("noSuchMethod", {}),  # unknown method
            ("capture", {"content": "BATCH   entry one"}),  # dedup within the batch
            ("append", {"id": keep, "addition": "appended in the batch"}),
            ("getCount", {}),  # reads work in a batch
        ]
    )
    oks = [ok for ok, _ in outcomes]
    assert oks == [True, False, False, True, False, False, False, True, True, True]
    errors = [type(r) for ok, r in outcomes if not ok]
    assert errors == [InvalidArgument, db.IntegrityError, SelfLink, NotFound, NotFound]
    first_id = outcomes[0].value["id"]
    assert outcomes[7].value == {"outcome": "blocked", "matchId": first_id}
    assert outcomes[9].value == {"count": 3}
    assert not ws.conn.in_transaction
    ws.close()

    # everything that succeeded is durable in the file; nothing of the failures is
    reopened = Workspace(path, clock=clock, synchronous="NORMAL")
    try:
        contents = {r[0] for r in reopened.conn.execute("SELECT content FROM entries")}
        assert contents == {
            "an entry from before the batch\nappended in the batch",
            "batch entry one",
            "batch entry two",
        }
        assert reopened.list_recent(tag="batch")["items"][0]["content"] == "batch entry two"
        assert reopened.list_recent(tag="bad")["items"] == []
        assert fts_rowcount(reopened, "poison") == 0
        assert reopened.get_entry(keep)["revisionCount"] == 1
    finally:
        reopened.close()


def test_run_batch_shares_one_timestamp(ws, clock):
    outcomes = ws.run_batch([("capture", {"content": f"stamped {i}"}) for i in range(5)])
    stamps = {ws.get_entry(r["id"])["createdAt"] for ok, r in outcomes}
    assert stamps == {clock.now_ms()}


def test_run_batch_empty(ws):
    assert ws.run_batch([]) == []
    assert not ws.conn.in_transaction


def test_run_batch_failure_undoes_its_own_partial_writes(ws):
    """A call failing after some of its statements ran keeps none of them."""
    entry_id = ws.capture("lemur base", tags=["one"])["id"]
    add_failing_trigger(ws, "fail_tags", "BEFORE INSERT", "tags", "new.tag = 'explode'")
    before = snapshot(ws)
    outcomes = ws.run_batch(
        [("append", {"id": entry_id, "addition": "lemur tail", "tags": ["explode"]})]
    )
    assert outcomes[0].ok is False
    assert snapshot(ws) == before


# ---- process crash ---------------------------------------------------------------------------

CRASHING_WRITER = r"""
import os, sys
from minisphere.engine.clock import ManualClock
from minisphere.engine.workspace import Workspace
ws = Workspace(sys.argv[1], clock=ManualClock(), synchronous="FULL")
acked = ws.capture("acknowledged before the crash", tags=["kept"])["id"]
print(acked, flush=True)
# a write that is in flight when the process dies: statements run, no COMMIT
ws.conn.execute("BEGIN IMMEDIATE")
ws.conn.execute("UPDATE entries SET content = 'half written' WHERE id = ?", (acked,))
ws.conn.execute("DELETE FROM tags")
os._exit(9)  # no close, no rollback, no checkpoint
"""


def test_process_crash_keeps_acknowledged_writes_only(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "crash.db"
    done = subprocess.run(
        [sys.executable, "-c", CRASHING_WRITER, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 9, done.stderr
    acked = done.stdout.strip()
    ws = Workspace(path, clock=ManualClock(), synchronous="NORMAL")
    try:
        entry = ws.get_entry(acked)
        assert entry["content"] == "acknowledged before the crash"
        assert entry["tags"] == ["kept"]
        assert fts_ids(ws, "acknowledged") == [acked] and fts_rowcount(ws, "half") == 0
        ws.conn.execute("INSERT INTO entries_fts(entries_fts, rank) VALUES ('integrity-check', 1)")
    finally:
        ws.close()


def test_commit_that_fails_leaves_no_transaction_open(ws):
    """COMMIT itself can fail (here: a deferred foreign key checked only at commit; in the
    field: disk full, I/O error). The transaction must be closed, so its writes are not
    committed by accident with the next call's COMMIT."""
    ws.conn.execute(
        "CREATE TABLE probe(entry_id TEXT REFERENCES entries(id) DEFERRABLE INITIALLY DEFERRED)"
    )
    ws.conn.execute(
        "CREATE TRIGGER probe_on_tags AFTER INSERT ON tags WHEN new.tag = 'doomed' "
        "BEGIN INSERT INTO probe VALUES ('no-such-entry'); END"
    )
    before = snapshot(ws)
    with pytest.raises(db.IntegrityError, match="FOREIGN KEY"):
        ws.capture("the pangolin entry that must not survive", tags=["doomed"])
    assert not ws.conn.in_transaction
    assert ws.capture("a later, sound capture")["outcome"] == "stored"
    assert (
        ws.conn.execute("SELECT COUNT(*) FROM entries WHERE content LIKE '%pangolin%'").fetchone()[
            0
        ]
        == 0
    )
    assert snapshot(ws)["rows"]["probe"] == before["rows"]["probe"] == []
