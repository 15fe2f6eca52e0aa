"""Fusion (RRF), the score breakdown, rerank factors and MMR."""
import math

import pytest

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.arms import Hit
from minisphere.engine.retrieval.fusion import fuse
from minisphere.engine.retrieval.rerank import decay_factor, jaccard, mmr, shingles
from tests.engine.retrieval.helpers import DAY_MS, by_id, ids

# ---- fusion ----------------------------------------------------------------------------------


def test_rrf_arithmetic_of_fuse():
    assert T.RRF_K == 60
    fused = fuse({"keyword": [Hit("a", 9.0), Hit("b", 5.0), Hit("c", 1.0)],
                  "graph": [Hit("c", 1.0, {"hop": 0}), Hit("d", 0.3, {"hop": 1})],
                  "vector": [Hit("d", 0.9)]})          # the seam a vector arm joins through
    assert fused["a"]["fused"] == pytest.approx(1 / 61)
    assert fused["b"]["fused"] == pytest.approx(1 / 62)
    assert fused["c"]["fused"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["d"]["fused"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"]["arms"]["keyword"] == {"rank": 3, "score": 1.0, "rrf": pytest.approx(1 / 63, abs=1e-6)}
    assert fused["d"]["arms"]["graph"] == {"rank": 2, "score": 0.3, "hop": 1, "rrf": pytest.approx(1 / 62, abs=1e-6)}
    assert set(fused["d"]["arms"]) == {"graph", "vector"}


@pytest.fixture
def linked(ws, now_clock, add, filler):
    filler()
    strong = add("Condor condor tracking collars ordered")
    weak = add("A condor was spotted above the canyon road during the long drive home")
    friend = add("Collar battery supplier contact")
    ws.link(strong, friend, "relates_to", weight=0.7)
    return strong, weak, friend


def test_breakdown_shows_every_stage(ws, linked):
    strong, weak, friend = linked
    result = ws.recall("condor")
    assert ids(result) == [strong, weak, friend]
    for item in result["items"]:
        b = item["breakdown"]
        assert set(b) >= {"keyword", "graph", "recency", "fused", "rerank", "final", "mmr"}
        assert set(b["rerank"]) >= {"decay", "recall", "importance", "tagOverlap", "rolledUp",
                                    "product"}
        arms = [arm for arm in (b["keyword"], b["graph"]) if arm is not None]
        for arm in arms:
            assert arm["rrf"] == pytest.approx(1 / (60 + arm["rank"]), abs=1e-6)
        assert b["fused"] == pytest.approx(sum(arm["rrf"] for arm in arms), abs=1e-5)
        assert b["final"] == pytest.approx(b["fused"] * b["rerank"]["product"], rel=1e-6)
        assert item["score"] == b["final"]
    top, second, third = (item["breakdown"] for item in result["items"])
    assert top["keyword"]["rank"] == 1 and top["graph"] == {"rank": 1, "score": 1.0, "hop": 0,
                                                            "via": None, "rrf": pytest.approx(1 / 61, abs=1e-6)}
    assert second["keyword"]["rank"] == 2 and second["graph"]["hop"] == 0
    assert third["keyword"] is None
    assert third["graph"]["hop"] == 1 and third["graph"]["score"] == pytest.approx(0.6 * 0.7)


def test_an_entry_found_by_two_arms_beats_one_found_by_one(ws, linked):
    """Fused = sum over arms: the keyword hit that is also a graph seed gets 1/61 + 1/61."""
    strong, weak, friend = linked
    result = by_id(ws.recall("condor", hops=0))
    assert result[strong]["breakdown"]["fused"] == pytest.approx(1 / 61, abs=1e-7)
    assert result[strong]["breakdown"]["graph"] is None
    with_graph = by_id(ws.recall("condor", hops=1))
    assert with_graph[strong]["breakdown"]["fused"] == pytest.approx(2 / 61, abs=1e-7)


# ---- rerank factors ----------------------------------------------------------------------------


def test_a_fresh_unimportant_never_recalled_entry_ranks_by_relevance(ws, now_clock, add, filler):
    filler()
    best = add("Falcon falcon falcon training log")
    other = add("One falcon note among many other words about the weather and the sea")
    result = ws.recall("falcon", hops=0)
    assert ids(result) == [best, other]
    for item in result["items"]:
        rerank = item["breakdown"]["rerank"]
        assert {k: rerank[k] for k in ("decay", "recall", "importance", "tagOverlap", "rolledUp",
                                       "product")} == dict.fromkeys(
            ("decay", "recall", "importance", "tagOverlap", "rolledUp", "product"), 1.0)
        assert item["breakdown"]["final"] == item["breakdown"]["fused"]


@pytest.mark.parametrize("volatility, half_life_days, floor", [
    ("durable", 365, 0.9), ("state", 30, 0.6), ("volatile", 3, 0.15)])
def test_time_decay_halves_towards_the_floor_and_never_below(ws, clock, now_clock, add,
                                                            volatility, half_life_days, floor):
    assert T.DECAY_FLOOR[volatility] == floor
    assert T.HALF_LIFE_MS[volatility] == half_life_days * DAY_MS
    entry = add("Egret nesting survey results", volatility=volatility)
    clock.advance(days=half_life_days)
    decay = by_id(ws.recall("egret"))[entry]["breakdown"]["rerank"]["decay"]
    assert decay == pytest.approx(floor + (1 - floor) / 2, abs=1e-6)
    clock.advance(days=50 * 365)
    decay = by_id(ws.recall("egret"))[entry]["breakdown"]["rerank"]["decay"]
    assert floor <= decay < floor + 1e-6


def test_decay_factor_bounds():
    for volatility, floor in T.DECAY_FLOOR.items():
        assert decay_factor(volatility, 0) == 1.0
        assert decay_factor(volatility, -5 * DAY_MS) == 1.0       # clock skew: never above 1
        ages = [0, DAY_MS, 30 * DAY_MS, 3650 * DAY_MS, 10**15]
        values = [decay_factor(volatility, age) for age in ages]
        assert values == sorted(values, reverse=True)
        assert all(floor <= v <= 1.0 for v in values)


def test_old_volatile_fact_loses_to_a_fresh_one_but_keeps_its_floor(ws, clock, now_clock, add, filler):
    filler()
    old = add("Ibis sighting counts by the river", volatility="volatile")
    clock.advance(days=100)
    fresh = add("Ibis sighting counts by the canal", volatility="volatile")
    result = ws.recall("ibis sighting counts")
    assert ids(result) == [fresh, old]
    decay = by_id(result)[old]["breakdown"]["rerank"]["decay"]
    assert decay == pytest.approx(T.DECAY_FLOOR["volatile"], abs=1e-6)


def test_importance_raises_the_score_within_its_bound(ws, now_clock, add, filler):
    filler()
    relevant = add("Swift swift swift migration route")
    important = add("A swift flew past the office window during the long afternoon meeting",
                    importance=1.0)
    half = add("Someone mentioned a swift in passing while we talked about other topics",
               importance=0.5)
    result = ws.recall("swift", hops=0)
    items = by_id(result)
    assert items[relevant]["breakdown"]["keyword"]["rank"] == 1
    assert items[important]["breakdown"]["keyword"]["rank"] > 1
    assert items[important]["breakdown"]["rerank"]["importance"] == pytest.approx(1.2)
    assert items[half]["breakdown"]["rerank"]["importance"] == pytest.approx(1.1)
    assert items[relevant]["breakdown"]["rerank"]["importance"] == 1.0
    assert ids(result)[0] == important        # 1.2 × 1/62 > 1/61


def test_tag_overlap_boost(ws, now_clock, add):
    tagged = add("Plover census plan", tags=["plover", "birds"])
    plain = add("Plover census notes")
    items = by_id(ws.recall("plover census"))
    assert items[tagged]["breakdown"]["rerank"]["tagShare"] == 0.5
    assert items[tagged]["breakdown"]["rerank"]["tagOverlap"] == pytest.approx(1.075)
    assert items[plain]["breakdown"]["rerank"]["tagOverlap"] == 1.0
    full = by_id(ws.recall("plover"))[tagged]["breakdown"]["rerank"]
    assert full["tagShare"] == 1.0
    assert full["tagOverlap"] == pytest.approx(1 + T.TAG_OVERLAP_BOOST_MAX) == pytest.approx(1.15)


def test_rolled_up_entries_are_scaled_down(ws, now_clock, add, filler):
    filler()
    rolled = add("Curlew curlew curlew call recordings", tags=["rolled-up"])
    summary = add("Summary: the curlew recordings from spring, merged into one overview note")
    result = ws.recall("curlew", hops=0)
    items = by_id(result)
    assert items[rolled]["breakdown"]["keyword"]["rank"] == 1
    assert items[rolled]["breakdown"]["rerank"]["rolledUp"] == 0.4
    assert items[rolled]["breakdown"]["final"] == pytest.approx(0.4 / 61, rel=1e-5)
    assert items[summary]["breakdown"]["rerank"]["rolledUp"] == 1.0
    assert ids(result) == [summary, rolled]


def test_recall_count_boost_is_logarithmic_and_capped(ws, now_clock, add):
    entry = add("Sandpiper feeding behaviour")
    seen = []
    for _ in range(5):
        seen.append(by_id(ws.recall("sandpiper"))[entry]["breakdown"]["rerank"]["recall"])
    assert seen[0] == 1.0                                         # never recalled before
    assert seen[1] == pytest.approx(1 + 0.05 * math.log(2), abs=1e-6)
    assert seen[2:] == [pytest.approx(1 + T.RECALL_BOOST_MAX)] * 3   # log1p(2) > 1: capped


def test_all_boosts_together_stay_within_their_bounds(ws, now_clock, add):
    entry = add("Avocet wading study", tags=["avocet"], importance=1.0)
    for _ in range(4):
        ws.recall("avocet")
    rerank = by_id(ws.recall("avocet"))[entry]["breakdown"]["rerank"]
    assert rerank["product"] == pytest.approx(1.05 * 1.2 * 1.15, rel=1e-5)
    assert rerank["product"] <= (1 + T.RECALL_BOOST_MAX) * (1 + T.IMPORTANCE_BOOST_MAX) * (
        1 + T.TAG_OVERLAP_BOOST_MAX) + 1e-9


# ---- MMR -------------------------------------------------------------------------------------


def test_mmr_picks_a_distinct_entry_before_a_near_duplicate(ws, now_clock, add, filler):
    filler()
    first = add("The billing deploy pipeline runs every night at two")
    second = add("The billing deploy pipeline runs every night at three")
    distinct = add("Billing deploy approvals need a second reviewer in the pipeline dashboard")
    for word in ["invoices", "refunds", "taxes", "ledger", "payouts", "disputes"]:
        add(f"Billing {word} are handled by the finance team")
    result = ws.recall("billing deploy pipeline")
    order = ids(result)
    items = by_id(result)
    dups = [i for i in order if i in (first, second)]
    top_dup, later_dup = dups
    assert order[0] == top_dup
    assert order.index(distinct) < order.index(later_dup)
    # without MMR the near-duplicate would have come first: it scores higher than the distinct one
    assert items[later_dup]["score"] > items[distinct]["score"]
    mmr_detail = items[later_dup]["breakdown"]["mmr"]
    assert mmr_detail["maxSimilarity"] == pytest.approx(5 / 7, abs=1e-6)   # 5 of 7 word pairs shared
    for item in result["items"]:
        m = item["breakdown"]["mmr"]
        assert m["mmr"] == pytest.approx(0.7 * m["relevance"] - 0.3 * m["maxSimilarity"], abs=1e-5)


def test_mmr_function_directly():
    assert T.MMR_LAMBDA == 0.7
    texts = {"a": "red fox jumps over the lazy dog", "b": "red fox jumps over the lazy dog",
             "c": "blue whale sings under the cold sea", "d": "green frog"}
    candidates = [("a", 1.0), ("b", 0.9), ("c", 0.8), ("d", 0.0)]
    picked = mmr(candidates, texts, top_k=4)
    assert [i for i, _ in picked] == ["a", "c", "b", "d"]
    detail = dict(picked)
    assert detail["b"] == {"relevance": 0.9, "maxSimilarity": 1.0, "mmr": pytest.approx(0.33)}
    assert detail["c"]["mmr"] == pytest.approx(0.56)
    assert [i for i, _ in mmr(candidates, texts, top_k=4, lam=1.0)] == ["a", "b", "c", "d"]
    assert len(mmr(candidates, texts, top_k=1)) == 1
    assert mmr([], texts, top_k=3) == []


def test_shingles_and_jaccard():
    one = shingles("The billing deploy pipeline runs every night at two")
    two = shingles("The billing deploy pipeline runs every night at three")
    assert jaccard(one, two) == pytest.approx(5 / 7)
    assert jaccard(one, shingles("Garden tomatoes need water")) == 0.0
    assert shingles("Zebra") == frozenset({"zebra"})
    assert jaccard(frozenset(), one) == 0.0
