"""Staleness in the engine (contract §7) with a ManualClock: marking and clearing per volatility
class, confirmation by update / append / independent re-capture, recall never refreshing, and
the `stale` / `staleSince` / `revalidate` fields recall answers with."""

import time

import pytest

from minisphere.engine import constants as C
from minisphere.engine.staleness import due_at, stale_tag

CLASSES = ["durable", "state", "volatile"]


def day_of(ms: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ms / 1000))


def capture(ws, text, **options):
    result = ws.capture(text, **options)
    assert result["outcome"] == "stored", result
    return result["id"]


def stale_tags(entry):
    return [t for t in entry["tags"] if t.startswith(C.STALE_TAG_PREFIX)]


def test_thresholds_are_named_and_ordered():
    assert C.STALE_AFTER_MS["volatile"] < C.STALE_AFTER_MS["state"] < C.STALE_AFTER_MS["durable"]
    assert C.STALE_AFTER_MS == {
        "durable": 365 * C.DAY_MS,
        "state": 30 * C.DAY_MS,
        "volatile": 2 * C.DAY_MS,
    }


@pytest.mark.parametrize("volatility", CLASSES)
def test_pass_marks_exactly_at_the_threshold_of_each_class(ws, clock, volatility):
    created = clock.now_ms()
    entry_id = capture(ws, f"a {volatility} fact about deployments", volatility=volatility)
    threshold = C.STALE_AFTER_MS[volatility]

    clock.advance(ms=threshold - 1)  # one millisecond before: still fresh
    assert ws.run_staleness_pass()["marked"] == 0
    entry = ws.get_entry(entry_id)
    assert entry["stale"] is False and entry["staleSince"] is None and stale_tags(entry) == []
    assert entry["staleDueAt"] == created + threshold

    clock.advance(ms=1)  # due: marked, with the dated tag
    result = ws.run_staleness_pass()
    assert (result["scanned"], result["marked"], result["cleared"], result["remaining"]) == (
        1,
        1,
        0,
        0,
    )
    entry = ws.get_entry(entry_id)
    assert entry["stale"] is True
    assert entry["staleSince"] == created + threshold
    assert stale_tags(entry) == [f"stale:as-of:{day_of(created + threshold)}"]
    assert stale_tag(created + threshold) == stale_tags(entry)[0]


def test_each_class_turns_stale_on_its_own_schedule(ws, clock):
    ids = {v: capture(ws, f"fact number {v} in the table", volatility=v) for v in CLASSES}
    clock.advance(days=3)
    assert ws.run_staleness_pass()["marked"] == 1
    assert [v for v in CLASSES if ws.get_entry(ids[v])["stale"]] == ["volatile"]
    clock.advance(days=28)
    assert ws.run_staleness_pass()["marked"] == 1
    assert [v for v in CLASSES if ws.get_entry(ids[v])["stale"]] == ["state", "volatile"]
    clock.advance(days=335)
    assert ws.run_staleness_pass()["marked"] == 1
    assert all(ws.get_entry(ids[v])["stale"] for v in CLASSES)


def test_age_is_measured_from_updated_at_not_created_at(ws, clock):
    entry_id = capture(ws, "the build uses a cache", volatility="volatile")
    clock.advance(days=1.5)
    ws.update(entry_id, "the build uses a remote cache")
    clock.advance(days=1)  # 2.5 days after creation, 1 after update
    assert ws.run_staleness_pass()["marked"] == 0
    assert ws.get_entry(entry_id)["stale"] is False
    clock.advance(days=1)
    assert ws.run_staleness_pass()["marked"] == 1


def _stale_entry(ws, clock, text="the staging host is db-7", source="agent-a"):
    entry_id = capture(ws, text, volatility="volatile", source=source)
    clock.advance(days=3)
    assert ws.run_staleness_pass()["marked"] == 1
    assert ws.get_entry(entry_id)["stale"] is True
    return entry_id


def _assert_confirmed(ws, clock, entry_id):
    entry = ws.get_entry(entry_id)
    assert entry["stale"] is False and entry["staleSince"] is None and stale_tags(entry) == []
    assert entry["updatedAt"] == clock.now_ms()
    assert entry["staleDueAt"] == due_at(clock.now_ms(), "volatile")
    # the pass agrees: nothing to mark, nothing to clear
    assert ws.run_staleness_pass() | {"nextDueAt": None} == {
        "scanned": 0,
        "marked": 0,
        "cleared": 0,
        "remaining": 0,
        "nextDueAt": None,
    }


def test_update_confirms_and_clears(ws, clock):
    entry_id = _stale_entry(ws, clock)
    ws.update(entry_id, "the staging host is db-8")
    _assert_confirmed(ws, clock, entry_id)


def test_update_with_the_same_words_confirms_without_a_revision(ws, clock):
    entry_id = _stale_entry(ws, clock)
    ws.update(entry_id, "the staging host is db-7")
    _assert_confirmed(ws, clock, entry_id)
    assert ws.get_entry(entry_id)["revisionCount"] == 0


def test_append_confirms_and_clears(ws, clock):
    entry_id = _stale_entry(ws, clock)
    ws.append(entry_id, "checked again by the on-call")
    _assert_confirmed(ws, clock, entry_id)


def test_exact_recapture_from_another_source_confirms(ws, clock):
    entry_id = _stale_entry(ws, clock, source="agent-a")
    result = ws.capture("the staging host is db-7", source="agent-b")
    assert result == {"outcome": "blocked", "matchId": entry_id, "confirmed": True}
    _assert_confirmed(ws, clock, entry_id)


@pytest.mark.parametrize("source", ["agent-a", None])
def test_recapture_from_the_same_or_no_source_does_not_confirm(ws, clock, source):
    entry_id = _stale_entry(ws, clock, source="agent-a")
    before = ws.get_entry(entry_id)
    options = {"source": source} if source else {}
    result = ws.capture("the staging host is db-7", **options)
    assert result == {"outcome": "blocked", "matchId": entry_id}
    after = ws.get_entry(entry_id)
    assert after["stale"] is True and after["updatedAt"] == before["updatedAt"]
    assert stale_tags(after) == stale_tags(before)


def test_unsourced_entry_is_not_confirmed_by_a_sourced_recapture(ws, clock):
    entry_id = _stale_entry(ws, clock, source=None)
    assert "confirmed" not in ws.capture("the staging host is db-7", source="agent-b")
    assert ws.get_entry(entry_id)["stale"] is True


def test_set_status_and_link_do_not_confirm(ws, clock):
    entry_id = _stale_entry(ws, clock)
    other = capture(ws, "db-7 lives in rack 4", volatility="durable")
    ws.set_status(entry_id, "draft")
    ws.link(entry_id, other, "relates_to")
    assert ws.get_entry(entry_id)["stale"] is True


def test_recall_never_refreshes(ws, clock):
    entry_id = _stale_entry(ws, clock, text="the deploy token rotates every friday")
    before = ws.get_entry(entry_id)
    for _ in range(3):
        found = ws.recall("deploy token rotates")
        assert [i["id"] for i in found["items"]] == [entry_id]
    after = ws.get_entry(entry_id)
    assert after["recallCount"] == before["recallCount"] + 3
    assert after["updatedAt"] == before["updatedAt"]
    assert after["stale"] is True and stale_tags(after) == stale_tags(before)
    assert ws.run_staleness_pass()["cleared"] == 0


def test_recall_never_refreshes_a_fresh_entry_either(ws, clock):
    entry_id = capture(ws, "the cache ttl is ten minutes", volatility="volatile")
    created = ws.get_entry(entry_id)["updatedAt"]
    clock.advance(days=1)
    ws.recall("cache ttl")
    clock.advance(days=1)
    entry = ws.get_entry(entry_id)
    assert entry["updatedAt"] == created and entry["stale"] is True  # lazily, not passed yet


def test_recall_items_carry_stale_fields_and_revalidate_prompts(ws, clock):
    old = capture(
        ws, "the release manager for payments is Dana", volatility="state", source="agent-a"
    )
    clock.advance(days=31)
    fresh = capture(
        ws, "the release checklist for payments lives in the wiki", volatility="durable"
    )
    found = ws.recall("payments release")
    items = {i["id"]: i for i in found["items"]}
    assert set(items) == {old, fresh}
    assert items[old]["stale"] is True
    assert items[old]["staleSince"] == due_at(items[old]["updatedAt"], "state")
    assert items[fresh]["stale"] is False and items[fresh]["staleSince"] is None
    assert [p["id"] for p in found["revalidate"]] == [old]
    prompt = found["revalidate"][0]
    assert prompt["staleSince"] == items[old]["staleSince"]
    assert "still true" in prompt["question"] and "Dana" in prompt["question"]
    assert day_of(items[old]["updatedAt"]) in prompt["question"]


def test_revalidate_prompt_is_short_for_long_content(ws, clock):
    capture(ws, "incident summary " + "detail " * 200, volatility="volatile")
    clock.advance(days=2)
    prompt = ws.recall("incident summary")["revalidate"][0]
    assert len(prompt["question"]) < C.REVALIDATE_PREVIEW_CHARS + 100
    assert prompt["question"].rstrip('"').endswith("…")


def test_no_revalidate_when_nothing_is_stale(ws, clock):
    capture(ws, "the office wifi is called orbit", volatility="durable")
    found = ws.recall("office wifi")
    assert found["items"] and found["revalidate"] == []
