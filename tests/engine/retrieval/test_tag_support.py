"""The tag arm: entries under a tag that holds many of the query's matches (tag_support.py)."""

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.arms import Hit
from minisphere.engine.retrieval.fusion import fuse
from minisphere.engine.retrieval.tag_support import tag_arm
from minisphere.engine.workspace import Workspace
from minisphere.wire.recall_answer import RecallAnswer
from tests.engine.retrieval.helpers import FILLER, by_id, ids
from tests.engine.vectors.helpers import ChosenVectors

TRIP = "island-trip"
# Three turns of one trip's planning match "ferry timetable"; the fourth answers it in other
# words but for "timetable"; an errand note elsewhere matches "timetable" a little better.
TRIP_TURNS = [
    "Ann: the ferry timetable for the island changes in May, the ferry leaves at eight",
    "Bob: then the ferry back is the last one, check the ferry timetable again",
    "Ann: I printed the ferry timetable and put it in the blue folder",
]
ANSWER = "Bob: the harbour office said the new timetable starts on the first Monday of the month"
ERRAND = "Ann: the bin collection timetable starts on the first Monday of the month"


@pytest.fixture
def trip(ws, now_clock, add, no_brevity):
    for text in FILLER:
        add(text)
    for text in TRIP_TURNS:
        add(text, tags=[TRIP])
    return add(ANSWER, tags=[TRIP]), add(ERRAND, tags=["errands"])


def test_an_entry_under_the_tag_holding_the_matches_outranks_a_lone_match(ws, trip, monkeypatch):
    answer, errand = trip
    result = ws.recall("ferry timetable", hops=0)
    order = ids(result)
    assert order.index(answer) < order.index(errand)
    items = by_id(result)
    assert items[answer]["breakdown"]["tag"]["tag"] == TRIP
    assert items[answer]["breakdown"]["tag"]["score"] == 1.0  # the heaviest tag
    assert 0 < items[errand]["breakdown"]["tag"]["score"] < 1.0
    for item in result["items"]:  # the arm's share is part of the fused score it shows
        b = item["breakdown"]
        shares = [b[arm]["rrf"] for arm in ("keyword", "graph", "tag") if b[arm]]
        assert b["fused"] == pytest.approx(sum(shares))
    assert result["queryUsed"]["arms"]["tag"] == len(
        [i for i in result["items"] if i["breakdown"]["tag"]]
    )
    TypeAdapter(RecallAnswer).validate_python(result)  # the published answer schema describes it

    monkeypatch.setattr(T, "TAG_SUPPORT_WEIGHT", 0.0)  # off: the failure it guards
    ws.conn.execute("UPDATE entries SET recall_count = 0")
    result = ws.recall("ferry timetable", hops=0)
    assert ids(result).index(errand) < ids(result).index(answer)
    assert "tag" not in result["queryUsed"]["arms"]


def test_a_tag_on_most_entries_groups_nothing(ws, now_clock, add, no_brevity):
    """A tag nearly every entry carries (an account's "notes") would lift every candidate alike:
    past COMMON_TERM_DOC_RATIO of the entries it is not counted."""
    for text in [*FILLER, *TRIP_TURNS, ANSWER, ERRAND]:
        add(text, tags=["notes"])
    result = ws.recall("ferry timetable", hops=0)
    assert result["items"]
    assert all(item["breakdown"]["tag"] is None for item in result["items"])
    assert "tag" not in result["queryUsed"]["arms"]


def test_bookkeeping_tags_are_no_context(ws, now_clock, add, no_brevity):
    """Summaries' sources share `rolled-up`: that is not a context the query is about."""
    for text in FILLER:
        add(text)
    found = [add(text, tags=["rolled-up"]) for text in TRIP_TURNS]
    result = ws.recall("ferry timetable", hops=0)
    assert set(found) <= set(ids(result))
    assert all(item["breakdown"]["tag"] is None for item in result["items"])


def test_the_tag_a_recall_is_filtered_by_is_no_context(ws, trip):
    """Every candidate of a recall filtered by a tag carries it: it tells none of them apart."""
    result = ws.recall("ferry timetable", hops=0, tag=TRIP)
    assert len(result["items"]) == len(TRIP_TURNS) + 1
    assert all(item["breakdown"]["tag"] is None for item in result["items"])


@given(
    st.lists(
        st.tuples(st.floats(0.01, 50.0), st.sampled_from(["a", "b", "c", None])),
        min_size=1,
        max_size=12,
    )
)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_tag_scores_are_relative_to_the_heaviest_tag(hits):
    """Whatever the keyword scores and tags: every returned candidate has a tag holding a
    keyword hit, its score is its heaviest tag's weight over the heaviest one's (in (0, 1], the
    heaviest tag's entries at 1), and only candidates are returned."""
    with tempfile.TemporaryDirectory() as tmp, Workspace(Path(tmp) / "ws.db") as ws:
        entries = []
        for n, (score, tag) in enumerate(hits):
            result = ws.capture(f"entry number {n} about topic {n}", tags=[tag] if tag else [])
            entries.append((result["id"], score, tag))
        keyword = sorted((Hit(i, score) for i, score, _ in entries), key=lambda h: -h.score)
        candidates = [i for i, _, _ in entries[::2]]
        found = tag_arm(ws.conn, keyword, candidates)
    best = keyword[0].score
    weight: dict[str, float] = {}
    for _, score, tag in entries:
        if tag:
            weight[tag] = weight.get(tag, 0.0) + score / best
    # a tag on more than COMMON_TERM_DOC_RATIO of the entries is not counted
    kept = {
        t: w
        for t, w in weight.items()
        if sum(1 for _, _, tag in entries if tag == t) <= T.COMMON_TERM_DOC_RATIO * len(entries)
    }
    tag_of = {i: tag for i, _, tag in entries}
    expected = {i for i in candidates if tag_of[i] in kept}
    assert {h.id for h in found} == expected
    for hit in found:
        assert hit.score == pytest.approx(kept[tag_of[hit.id]] / max(kept.values()))
        assert 0 < hit.score <= 1.0


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=10))
def test_fused_score_adds_the_tag_share(tag_scores):
    keyword = [Hit(f"k{i}", 10.0 - i) for i in range(len(tag_scores))]
    tagged = [Hit(f"k{i}", s, {"tag": "t"}) for i, s in enumerate(tag_scores) if s > 0]
    fused = fuse({"keyword": keyword, "tag": tagged})
    for i, s in enumerate(tag_scores):
        slot = fused[f"k{i}"]
        assert slot["fused"] == pytest.approx((10.0 - i) / 10.0 + T.TAG_SUPPORT_WEIGHT * s)
        assert slot["fused"] == pytest.approx(sum(a["rrf"] for a in slot["arms"].values()))


def test_with_a_binding_the_tag_share_is_part_of_the_lexical_score(tmp_path, clock):
    """Bound, the arm's share joins the lexical score the hybrid mixes with the cosine: every
    item's shares still add up to its fused score, and the answer schema describes it."""
    with Workspace(tmp_path / "bound.db", clock=clock, embedder=ChosenVectors()) as ws:
        for text in FILLER:
            ws.capture(text)
        trip_ids = [ws.capture(text, tags=[TRIP])["id"] for text in [*TRIP_TURNS, ANSWER]]
        ws.capture(ERRAND, tags=["errands"])
        result = ws.recall("ferry timetable", hops=0)
    assert result["queryUsed"]["arms"]["vector"] >= 1 and result["queryUsed"]["arms"]["tag"] >= 1
    items = by_id(result)
    share = result["queryUsed"]["fusion"]["lexicalShare"]
    assert share > 0  # the words have a say here, so the tag share counts
    for i in trip_ids:
        if i in items:
            tag = items[i]["breakdown"]["tag"]
            assert tag["tag"] == TRIP and tag["rrf"] > 0
    for item in result["items"]:
        b = item["breakdown"]
        shares = [b[arm]["rrf"] for arm in ("keyword", "graph", "tag", "vector") if b.get(arm)]
        assert b["fused"] == pytest.approx(sum(shares))
    TypeAdapter(RecallAnswer).validate_python(result)


def test_a_staleness_pass_changes_no_recall_score(ws, now_clock, add, no_brevity):
    """The pass marks what recall already judges stale by age (`stale:as-of:<day>`): entries
    that turned stale on one day share that mark, which the tag arm must not take for a
    context, or running the pass would reorder recall."""
    for text in FILLER:
        add(text, volatility="durable")
    for text in TRIP_TURNS:
        add(text, tags=[TRIP], volatility="durable")
    add(ANSWER, tags=[TRIP], volatility="durable")
    add(ERRAND, volatility="volatile")
    add("Bob: the gym timetable for the winter is on the door", volatility="volatile")
    now_clock.advance(days=3)  # the two volatile entries are stale, unmarked

    def scores() -> list[tuple[str, float, dict | None]]:
        ws.conn.execute("UPDATE entries SET recall_count = 0")  # a recall counts itself
        result = ws.recall("ferry timetable", hops=0)
        return [(i["id"], i["score"], i["breakdown"]["tag"]) for i in result["items"]]

    judged_at_read = scores()
    assert ws.run_staleness_pass()["marked"] == 2
    assert scores() == judged_at_read
