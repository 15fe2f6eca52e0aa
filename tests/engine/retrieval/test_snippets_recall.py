"""Snippet budget, recall's bookkeeping (recall_count, updated_at, no cache) and bad arguments."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.snippets import apply_budget, truncation_marker
from minisphere.errors import InvalidArgument
from tests.engine.retrieval.helpers import by_id, entry_rows, ids

ID = "00000000-0000-4000-8000-00000000000{}"


def _item(index, content):
    """An item as recall hands it to the budget: whole, and not yet cut."""
    return {
        "id": ID.format(index),
        "content": content,
        "contentChars": len(content),
        "truncated": False,
    }


def _items(*lengths, char="x"):
    return [_item(i, char * n) for i, n in enumerate(lengths)]


def test_recall_of_many_long_entries_shows_4000_twice_then_400_within_12000(ws, now_clock, add):
    """The documented budget, end to end: recall reads only a prefix of each candidate from
    the file, yet the two best show 4,000 characters, the next ten 400, the rest only the
    marker, and every item still says how long the whole entry is."""
    lengths = {add(f"razorbill {i} " + "abcdefghij" * 600): None for i in range(14)}
    for entry_id in lengths:
        lengths[entry_id] = len(ws.get_entry(entry_id)["content"])
    result = ws.recall("razorbill", topK=14)
    heads = [
        item["content"].split(" [truncated · ")[0]
        if not item["content"].startswith("[truncated")
        else ""
        for item in result["items"]
    ]
    assert [len(head) for head in heads] == [4000, 4000] + [400] * 10 + [0, 0]
    assert sum(len(head) for head in heads) == 12000
    for item, head in zip(result["items"], heads):
        assert item["truncated"] is True and item["contentChars"] == lengths[item["id"]]
        assert item["content"].endswith(
            truncation_marker(lengths[item["id"]] - len(head), item["id"])
        )


def test_top_two_get_4000_the_rest_400():
    items = _items(5000, 4000, 1000, 400, 401)
    apply_budget(items, full=False)
    assert (
        items[0]["content"]
        == "x" * 4000 + " " + f'[truncated · 1000 chars · get("{ID.format(0)}")]'
    )
    assert items[1]["content"] == "x" * 4000 and not items[1]["truncated"]
    assert items[2]["content"] == "x" * 400 + " " + truncation_marker(600, ID.format(2))
    assert items[3]["content"] == "x" * 400 and not items[3]["truncated"]
    assert items[4]["content"] == "x" * 400 + " " + truncation_marker(1, ID.format(4))
    assert [i["truncated"] for i in items] == [True, False, True, False, True]
    assert [i["contentChars"] for i in items] == [5000, 4000, 1000, 400, 401]


def test_12000_characters_in_total():
    items = _items(*([5000] * 2 + [1000] * 12))
    apply_budget(items, full=False)
    # 2 × 4000 + 10 × 400 = 12000: the 13th and 14th items have nothing left but the marker
    kept = [
        len(item["content"].split(" [truncated")[0]) if item["truncated"] else len(item["content"])
        for item in items[:12]
    ]
    assert kept == [4000, 4000] + [400] * 10
    assert items[12]["content"] == truncation_marker(1000, ID.format(12))
    assert items[13]["truncated"] is True
    assert items[13]["content"].startswith("[truncated · 1000 chars")


def test_short_items_leave_budget_for_later_ones():
    items = _items(3900, 3900, 100, 3900, 3900, 3900)
    apply_budget(items, full=False)
    # 3900 + 3900 + 100 = 7900; 400 + 400 + 400 = 1200; all within 12000
    assert [i["truncated"] for i in items] == [False, False, False, True, True, True]
    items = _items(4000, 4000, *([400] * 9), 1000)
    apply_budget(items, full=False)
    # 8000 + 3600 = 11600 used; the last item may have 400 more
    assert items[-1]["content"].startswith("x" * 400 + " [truncated · 600 chars")


def test_cut_drops_trailing_whitespace_and_counts_it_as_left_out():
    text = "a" * 398 + "  " + "b" * 100
    items = [_item(0, "x"), _item(1, "y"), _item(2, text)]
    apply_budget(items, full=False)
    assert items[2]["content"] == "a" * 398 + " " + truncation_marker(102, ID.format(2))


def test_full_bypasses_the_budget():
    items = _items(*([6000] * 5))
    apply_budget(items, full=True)
    assert all(item["content"] == "x" * 6000 and item["truncated"] is False for item in items)
    assert [item["contentChars"] for item in items] == [6000] * 5


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 6000), max_size=20))
def test_budget_arithmetic_holds_for_any_lengths(lengths):
    items = [_item(i % 10, "w" * n) for i, n in enumerate(lengths)]
    apply_budget(items, full=False)
    total = 0
    for position, (item, n) in enumerate(zip(items, lengths)):
        cap = 4000 if position < 2 else 400
        if item["truncated"]:
            head, _, marker = item["content"].partition("[truncated · ")
            head = head.rstrip(" ")
            omitted = int(marker.split(" chars")[0])
            assert item["content"].endswith(f'get("{item["id"]}")]')
            assert len(head) + omitted == n
            assert len(head) <= cap and omitted > 0
        else:
            head = item["content"]
            assert head == "w" * n and n <= cap
        total += len(head)
    assert total <= T.SNIPPET_TOTAL_CHARS


def test_recall_applies_the_budget_and_full_bypasses_it(ws, now_clock, add):
    long_ids = [
        add(f"kittiwake report {i} " + "lorem ipsum dolor sit amet " * 250) for i in range(4)
    ]
    long_len = len(ws.get_entry(long_ids[0])["content"])
    assert long_len > 4000
    result = ws.recall("kittiwake")
    assert len(result["items"]) == 4
    for position, item in enumerate(result["items"]):
        cap = 4000 if position < 2 else 400
        assert item["truncated"] is True
        assert item["contentChars"] == long_len
        head, marker = item["content"].rsplit(" [truncated · ", 1)
        assert len(head) <= cap
        assert marker == f'{long_len - len(head)} chars · get("{item["id"]}")]'
    full = ws.recall("kittiwake", full=True)
    assert all(not item["truncated"] and len(item["content"]) == long_len for item in full["items"])


# ---- recall bookkeeping ----------------------------------------------------------------------


def test_recall_counts_use_but_never_touches_updated_at(ws, clock, now_clock, add):
    hit = add("Guillemot egg colour variation")
    miss = add("Unrelated gardening notes")
    before = ws.get_entry(hit)
    clock.advance(days=3)
    result = ws.recall("guillemot")
    assert ids(result) == [hit]
    assert result["items"][0]["recallCount"] == 1
    after = ws.get_entry(hit)
    assert after["recallCount"] == before["recallCount"] + 1 == 1
    assert after["updatedAt"] == before["updatedAt"]
    ws.recall("guillemot")
    assert ws.get_entry(hit)["recallCount"] == 2
    assert ws.get_entry(hit)["updatedAt"] == before["updatedAt"]
    assert ws.get_entry(miss)["recallCount"] == 0


def test_only_returned_entries_are_counted(ws, now_clock, add):
    made = [add(f"Razorbill note {i} " + "filler " * i) for i in range(5)]
    result = ws.recall("razorbill", topK=2)
    returned = set(ids(result))
    assert len(returned) == 2
    for entry in made:
        assert ws.get_entry(entry)["recallCount"] == (1 if entry in returned else 0)


def test_no_result_cache(ws, now_clock, add):
    assert ws.recall("shearwater")["items"] == []
    new = add("Shearwater burrow count")
    assert ids(ws.recall("shearwater")) == [new]
    ws.set_status(new, "deprecated")
    assert ws.recall("shearwater")["items"] == []


def test_scores_are_recomputed_on_every_call(ws, clock, now_clock, add):
    entry = add("Fulmar flight notes", volatility="volatile")
    first = by_id(ws.recall("fulmar"))[entry]["breakdown"]["rerank"]["decay"]
    clock.advance(days=3)
    second = by_id(ws.recall("fulmar"))[entry]["breakdown"]["rerank"]["decay"]
    assert first == 1.0 and second == pytest.approx(0.575, abs=1e-6)


def test_top_k_limits_results(ws, now_clock, add):
    for i in range(6):
        add(f"Tern colony note {i}")
    assert len(ws.recall("tern", topK=3)["items"]) == 3
    assert len(ws.call("recall", {"query": "tern", "topK": 50})["items"]) == 6
    assert len(ws.recall("tern", top_k=1)["items"]) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"query": "tern", "topK": 0},
        {"query": "tern", "topK": 51},
        {"query": "tern", "topK": "5"},
        {"query": "tern", "topK": 5.5},
        {"query": "tern", "topK": True},
        {"query": "tern", "hops": 4},
        {"query": "tern", "hops": -1},
        {"query": "tern", "hops": "1"},
        {"query": "tern", "kind": "procedural"},
        {"query": "tern", "full": "yes"},
        {"query": "tern", "tag": 5},
        {"query": "tern", "tag": "\x07bell"},
        {"query": "tern", "limit": 5},
        {"query": "tern", "topk": 5},
        {"query": 5},
        {"query": None},
        {"query": ""},
        {"query": "   "},
        {"query": "x" * 4097},
        {},
    ],
)
def test_bad_arguments_are_refused_and_change_nothing(ws, now_clock, add, body):
    add("Tern colony note")
    before = entry_rows(ws)
    with pytest.raises(InvalidArgument):
        ws.call("recall", body)
    assert entry_rows(ws) == before


def test_arguments_at_the_limits_are_accepted(ws, now_clock, add):
    hit = add("Tern colony note")
    for body in [
        {"topK": 1},
        {"topK": 50},
        {"hops": 0},
        {"hops": 3},
        {"kind": "semantic"},
        {"full": True},
        {"top_k": 2},
        {"topK": 50.0},
    ]:  # 50.0: JSON Schema's integer 50
        assert ids(ws.call("recall", {"query": "tern", **body})) == [hit]
    assert ws.recall("tern " + "x" * 4091)["items"][0]["id"] == hit
