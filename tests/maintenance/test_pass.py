"""runStalenessPass: limit and resume, idempotence, nextDueAt, and the lazy read path agreeing
with the pass (getEntry, listRecent, recall, getBrief see the same tags and stale fields before
and after the pass runs)."""

import pytest

from minisphere.engine import constants as C
from minisphere.engine.staleness import due_at, stale_tag

VOLATILITIES = ["durable", "state", "volatile"]


def fill(ws, n, start=0):
    calls = [
        (
            "capture",
            {
                "content": f"note {i} about the search cluster shard {i}",
                "volatility": VOLATILITIES[i % 3],
                "tags": [f"batch-{i % 4}"],
            },
        )
        for i in range(start, start + n)
    ]
    outcomes = ws.run_batch(calls)
    assert all(ok for ok, _ in outcomes)
    return [result["id"] for _, result in outcomes]


def stale_view(entry):
    return (tuple(entry["tags"]), entry["stale"], entry["staleSince"], entry["staleDueAt"])


def snapshot(ws, ids):
    """Every read path's view of staleness, keyed by entry id."""
    views = {
        "getEntry": {i: stale_view(ws.get_entry(i)) for i in ids},
        "listRecent": {e["id"]: stale_view(e) for e in ws.list_recent(n=200)["items"]},
    }
    found = ws.recall("search cluster shard", topK=50)
    views["recall"] = {e["id"]: stale_view(e) for e in found["items"]}
    views["revalidate"] = sorted((p["id"], p["staleSince"]) for p in found["revalidate"])
    brief = ws.get_brief()
    views["brief"] = {
        p["id"]: tuple(p["tags"]) for p in brief["recentActivity"]["entries"] + brief["resurface"]
    }
    return views


def test_result_shape(ws):
    assert ws.run_staleness_pass() == {
        "scanned": 0,
        "marked": 0,
        "cleared": 0,
        "remaining": 0,
        "nextDueAt": None,
    }


def test_limit_and_resume(ws, clock):
    fill(ws, 60)
    clock.advance(days=400)  # everything is due
    remaining, calls = [], 0
    while True:
        result = ws.run_staleness_pass(limit=25)
        calls += 1
        assert result["scanned"] <= 25
        assert result["marked"] == result["scanned"]
        remaining.append(result["remaining"])
        if result["remaining"] == 0:
            break
    assert remaining == [35, 10, 0] and calls == 3
    assert ws.run_staleness_pass(limit=25)["scanned"] == 0


def test_longest_overdue_first(ws, clock):
    durable = fill(ws, 1)[0]  # index 0: durable, due after 365 d
    clock.advance(days=1)
    volatile = ws.capture("the queue depth is 40 right now")["id"]  # volatile by the heuristic
    clock.advance(days=500)  # both due; the volatile one since day 3
    assert ws.run_staleness_pass(limit=1)["remaining"] == 1
    assert ws.get_entry(volatile)["stale"] is True
    entry = ws.call("getEntry", {"id": durable})
    assert entry["stale"] is True  # lazily judged ...
    assert ws.run_staleness_pass(limit=1)["marked"] == 1  # ... and persisted by the next call


def test_second_pass_right_after_changes_nothing(ws, clock):
    ids = fill(ws, 30)
    clock.advance(days=40)
    first = ws.run_staleness_pass()
    assert first["marked"] == 20 and first["remaining"] == 0  # state + volatile
    before = snapshot(ws, ids)
    second = ws.run_staleness_pass()
    assert (second["scanned"], second["marked"], second["cleared"], second["remaining"]) == (
        0,
        0,
        0,
        0,
    )
    assert second["nextDueAt"] == first["nextDueAt"]
    after = snapshot(ws, ids)
    for view in ("getEntry", "listRecent", "recall", "brief"):
        assert after[view] == before[view], view


def test_tags_are_not_duplicated_by_repeated_passes(ws, clock):
    entry_id = fill(ws, 3)[2]  # volatile
    clock.advance(days=3)
    for _ in range(3):
        ws.run_staleness_pass()
    tags = ws.get_entry(entry_id)["tags"]
    assert sum(t.startswith(C.STALE_TAG_PREFIX) for t in tags) == 1
    assert {t["tag"]: t["count"] for t in ws.get_tags()["tags"]}[tags[-1]] == 1


@pytest.mark.parametrize("days", [1, 3, 31, 366])
def test_lazy_reads_agree_with_the_pass(ws, clock, days):
    ids = fill(ws, 24)
    clock.advance(days=days / 2)
    ws.update(ids[5], "note 5 about the search cluster shard 5, re-checked")  # volatile
    ws.append(ids[1], "still the search cluster shard 1")  # state
    clock.advance(days=days / 2)
    lazy = snapshot(ws, ids)
    ws.run_staleness_pass()
    passed = snapshot(ws, ids)
    for view in ("getEntry", "listRecent", "recall", "brief", "revalidate"):
        assert passed[view] == lazy[view], view
    expected_stale = sum(1 for v in lazy["getEntry"].values() if v[1])
    assert expected_stale == {1: 0, 3: 7, 31: 15, 366: 24}[days]


def test_lazy_agrees_after_a_confirmation_and_a_second_pass(ws, clock):
    ids = fill(ws, 9)
    clock.advance(days=40)
    ws.run_staleness_pass()
    ws.update(ids[1], "note 1 about the search cluster shard 1 confirmed")
    ws.capture("note 4 about the search cluster shard 4", source="agent-b")  # unsourced: no
    lazy = snapshot(ws, ids)
    assert lazy["getEntry"][ids[1]][1] is False and lazy["getEntry"][ids[4]][1] is True
    result = ws.run_staleness_pass()
    assert (result["marked"], result["cleared"]) == (0, 0)  # confirm already cleared it
    assert snapshot(ws, ids) == lazy


def test_next_due_at(ws, clock):
    assert ws.run_staleness_pass()["nextDueAt"] is None
    start = clock.now_ms()
    fill(ws, 3)  # durable, state, volatile at `start`
    assert ws.run_staleness_pass()["nextDueAt"] == due_at(start, "volatile")
    clock.advance(days=2)
    result = ws.run_staleness_pass()
    assert result["marked"] == 1 and result["nextDueAt"] == due_at(start, "state")
    clock.advance(days=28)
    assert ws.run_staleness_pass()["nextDueAt"] == due_at(start, "durable")
    clock.advance(days=335)
    assert ws.run_staleness_pass()["nextDueAt"] is None  # everything is marked: nothing can turn


def test_next_due_at_moves_with_a_confirmation(ws, clock):
    ids = fill(ws, 3)
    clock.advance(days=3)
    ws.run_staleness_pass()
    ws.update(ids[2], "note 2 about the search cluster shard 2 (checked)")
    assert ws.run_staleness_pass()["nextDueAt"] == due_at(clock.now_ms(), "volatile")


def test_forgotten_entries_leave_nothing_pending(ws, clock):
    ids = fill(ws, 6)
    clock.advance(days=400)
    for entry_id in ids[:3]:
        ws.forget(entry_id)
    assert ws.run_staleness_pass()["marked"] == 3


def test_the_tag_date_is_the_day_the_entry_turned_stale(ws, clock):
    entry_id = fill(ws, 3)[2]  # volatile
    due = ws.get_entry(entry_id)["staleDueAt"]
    clock.advance(days=90)  # long after: the date stays the due day
    ws.run_staleness_pass()
    assert stale_tag(due) in ws.get_entry(entry_id)["tags"]


def test_filtering_by_a_stale_tag_agrees_before_the_pass(ws, clock):
    entry_id = fill(ws, 3)[2]
    clock.advance(days=3)
    tag = stale_tag(ws.get_entry(entry_id)["staleDueAt"])
    lazy = [e["id"] for e in ws.list_recent(tag=tag)["items"]]
    ws.run_staleness_pass()
    lazy_tags = {t["tag"]: t["count"] for t in ws.get_tags()["tags"]}
    lazy_recall = [i["id"] for i in ws.recall("search cluster shard", tag=tag)["items"]]
    ws.run_staleness_pass()
    assert lazy == [e["id"] for e in ws.list_recent(tag=tag)["items"]] == [entry_id]
    assert lazy_tags[tag] == {t["tag"]: t["count"] for t in ws.get_tags()["tags"]}[tag] == 1
    assert (
        lazy_recall
        == [i["id"] for i in ws.recall("search cluster shard", tag=tag)["items"]]
        == [entry_id]
    )
