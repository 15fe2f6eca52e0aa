"""Idempotency keys in the engine: a keyed write sent again answers what it answered and writes
nothing; the key is stored in the same transaction as the write, so it exists exactly when the
write committed."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minisphere import errors as E
from minisphere.engine.idempotency import IDEMPOTENCY_KEEP_MS
from minisphere.engine.workspace import Workspace
from tests.engine.helpers import snapshot

MISSING_ID = "123e4567-e89b-42d3-a456-426614174000"


def test_retried_append_with_its_key_is_applied_once(ws):
    entry = ws.capture("the deploy runs nightly")["id"]
    first = ws.call("append", {"id": entry, "addition": "and on demand"}, idempotency_key="k-1")
    before = snapshot(ws)
    again = ws.call("append", {"id": entry, "addition": "and on demand"}, idempotency_key="k-1")
    assert again == first
    assert snapshot(ws) == before
    assert ws.get_entry(entry)["content"].count("and on demand") == 1


def test_retried_capture_with_its_key_answers_stored_not_blocked(ws):
    first = ws.call("capture", {"content": "a brand new fact"}, idempotency_key="c-1")
    again = ws.call("capture", {"content": "a brand new fact"}, idempotency_key="c-1")
    assert first["outcome"] == again["outcome"] == "stored" and again["id"] == first["id"]
    assert ws.get_count() == {"count": 1}


@pytest.mark.parametrize(
    "method, body",
    [
        ("append", {"addition": "something else"}),  # same method, other body
        ("update", {"content": "a replacement"}),  # other method
    ],
)
def test_same_key_for_another_call_is_refused_and_changes_nothing(ws, method, body):
    entry = ws.capture("the cache holds a day")["id"]
    ws.call("append", {"id": entry, "addition": "of data"}, idempotency_key="k-2")
    before = snapshot(ws)
    with pytest.raises(E.IdempotencyKeyReused):
        ws.call(method, {"id": entry, **body}, idempotency_key="k-2")
    assert snapshot(ws) == before


def test_failed_keyed_write_stores_no_key_so_a_corrected_retry_runs(ws):
    with pytest.raises(E.NotFound):
        ws.call("append", {"id": MISSING_ID, "addition": "x"}, idempotency_key="k-3")
    assert ws.conn.execute("SELECT COUNT(*) FROM idempotency_keys").fetchone()[0] == 0
    entry = ws.capture("now it exists")["id"]
    ws.call("append", {"id": entry, "addition": "x"}, idempotency_key="k-3")
    assert ws.conn.execute("SELECT COUNT(*) FROM idempotency_keys").fetchone()[0] == 1


def test_same_key_twice_in_one_group_commit_is_applied_once(ws):
    entry = ws.capture("one group")["id"]
    call = ("append", {"id": entry, "addition": "grouped"}, "k-5")
    first, second = ws.run_batch([call, call])
    assert first.ok and second.ok and second.replayed and not first.replayed
    assert ws.get_entry(entry)["content"].count("grouped") == 1


@pytest.mark.parametrize("key", ["", "has space", "tab\there", "é", "x" * 201])
def test_malformed_idempotency_key_is_refused_and_changes_nothing(ws, key):
    before = snapshot(ws)
    with pytest.raises(E.MalformedRequest):
        ws.call("capture", {"content": "never stored"}, idempotency_key=key)
    assert snapshot(ws) == before


def test_keys_answer_for_a_day_then_expire(ws, clock):
    entry = ws.capture("expiry")["id"]
    ws.call("append", {"id": entry, "addition": "once"}, idempotency_key="old")
    clock.advance(ms=IDEMPOTENCY_KEEP_MS - 1000)
    ws.call("append", {"id": entry, "addition": "once"}, idempotency_key="old")  # replayed
    assert ws.get_entry(entry)["content"].count("once") == 1
    clock.advance(ms=2000)
    ws.call("capture", {"content": "any keyed write prunes"}, idempotency_key="new")
    keys = [k for (k,) in ws.conn.execute("SELECT key FROM idempotency_keys")]
    assert keys == ["new"]


def test_replayed_answer_survives_reopening_the_file(tmp_path, clock):
    path = tmp_path / "w.db"
    ws = Workspace(path, clock=clock, synchronous="NORMAL")
    first = ws.call("capture", {"content": "before the crash"}, idempotency_key="k-6")
    ws.close()
    reopened = Workspace(path, clock=clock, synchronous="NORMAL")
    assert reopened.call("capture", {"content": "before the crash"}, idempotency_key="k-6") == first
    assert reopened.get_count() == {"count": 1}
    reopened.close()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(repeats=st.lists(st.integers(min_value=0, max_value=4), min_size=1, max_size=12))
def test_any_interleaving_of_repeats_equals_each_write_once(tmp_path_factory, repeats):
    """Writes 0..4 (appends with their own keys), each sent any number of times in any order:
    the entry ends holding each write's text exactly once."""
    folder = tmp_path_factory.mktemp("repeats")
    ws = Workspace(folder / "w.db", synchronous="NORMAL")
    entry = ws.capture("start")["id"]
    for n in repeats:
        ws.call("append", {"id": entry, "addition": f"write-{n}"}, idempotency_key=f"key-{n}")
    content = ws.get_entry(entry)["content"]
    for n in set(repeats):
        assert content.count(f"write-{n}") == 1
    revisions = ws.conn.execute(
        "SELECT COUNT(*) FROM revisions WHERE entry_id = ?", (entry,)
    ).fetchone()[0]
    assert revisions == len(set(repeats))
    ws.close()
