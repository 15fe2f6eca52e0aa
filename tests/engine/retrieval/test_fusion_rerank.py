"""Fusion (lexical score, hybrid convex mix), the score breakdown, rerank factors and MMR."""

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.arms import Hit
from minisphere.engine.retrieval.fusion import (
    FLAT_COSINE_SPREAD,
    fuse,
    fuse_hybrid,
    lexical_margin,
    lexical_share,
)
from minisphere.engine.retrieval.rerank import decay_factor, jaccard, mmr, shingles
from tests.engine.retrieval.helpers import DAY_MS, by_id, ids

# ---- fusion ----------------------------------------------------------------------------------
GRAPH_W = T.GRAPH_FUSION_WEIGHT


def order(slots: dict) -> list[str]:
    """Slots best first, ties kept in the slots' own order (as recall's stable sort does)."""
    return sorted(slots, key=lambda i: -slots[i]["fused"])


def test_lexical_fusion_adds_graph_support_to_the_scaled_keyword_score():
    fused = fuse(
        {
            "keyword": [Hit("a", 9.0), Hit("b", 4.5), Hit("c", 0.9)],
            "graph": [Hit("c", 0.5, {"hop": 0, "via": "a"}), Hit("d", 0.3, {"hop": 1, "via": "a"})],
        }
    )
    assert fused["a"]["fused"] == pytest.approx(1.0)
    assert fused["b"]["fused"] == pytest.approx(0.5)
    assert fused["c"]["fused"] == pytest.approx(0.1 + GRAPH_W * 0.5)
    assert fused["d"]["fused"] == pytest.approx(GRAPH_W * 0.3)
    assert fused["c"]["arms"]["keyword"] == {"rank": 3, "score": 0.9, "rrf": pytest.approx(0.1)}
    assert fused["d"]["arms"]["graph"] == {
        "rank": 2,
        "score": 0.3,
        "hop": 1,
        "via": "a",
        "rrf": pytest.approx(GRAPH_W * 0.3),
    }
    for slot in fused.values():  # the shares add up to the fused score
        assert slot["fused"] == pytest.approx(sum(a["rrf"] for a in slot["arms"].values()))


def test_a_neighbour_of_the_best_hit_can_outrank_a_weak_keyword_hit():
    """What reciprocal rank never allowed: graph rank 1 alone (1/61) lost to every entry both
    arms found. A follows-neighbour (weight 0.5) of the best hit now scores half of it."""
    keyword = [Hit("question", 10.0), Hit("weak", 2.0)]
    graph = [Hit("answer", T.GRAPH_HOP_DECAY * 0.5, {"hop": 1, "via": "question"})]
    assert order(fuse({"keyword": keyword, "graph": graph})) == ["question", "answer", "weak"]


def test_recency_list_keeps_its_order():
    hits = [Hit(x, float(100 - i)) for i, x in enumerate("abc")]
    fused = fuse({"recency": hits})
    assert order(fused) == ["a", "b", "c"]
    assert fused["b"]["fused"] == pytest.approx(1 / (T.RRF_K + 2))


@pytest.mark.parametrize(
    "margin, share",
    [
        (0.0, 0.0),
        (1 / 3, 0.0),
        (0.5, 0.25),
        (0.6, 0.4),
        (0.8, T.HYBRID_LEXICAL_MAX),
        (1.0, T.HYBRID_LEXICAL_MAX),
    ],
)
def test_lexical_share_grows_with_the_margin_and_is_capped(margin, share):
    assert lexical_share(margin) == pytest.approx(share)


def test_lexical_margin_compares_the_best_with_the_tenth():
    assert lexical_margin([]) == 0.0
    assert lexical_margin([1.0] * 12) == 0.0  # flat: no say
    assert lexical_margin([1.0, 0.5]) == 1.0  # fewer than 10: peaked
    assert lexical_margin([1.0] + [0.9] * 8 + [0.25, 0.1]) == pytest.approx(0.75)


def _no_refine(hits):
    return lambda head: hits


distinct_scores = st.lists(st.floats(0.01, 100.0), min_size=1, max_size=30, unique=True)


@settings(max_examples=60, deadline=None)
@given(scores=distinct_scores, cosine=st.floats(-0.5, 1.0), share_of_ids=st.floats(0, 1))
def test_a_vector_arm_giving_every_entry_the_same_cosine_cannot_reorder_the_lexical_ranking(
    scores, cosine, share_of_ids
):
    keyword = [Hit(f"k{i}", s) for i, s in enumerate(sorted(scores, reverse=True))]
    flat = [
        Hit(h.id, cosine, {"cosine": cosine})
        for h in keyword[: max(1, int(len(keyword) * share_of_ids))]
    ]
    flat += [Hit(f"v{i}", cosine, {"cosine": cosine}) for i in range(3)]  # entries only it found
    hybrid = order(fuse_hybrid({"keyword": keyword, "vector": flat}, _no_refine(flat)))
    assert hybrid[: len(keyword)] == [h.id for h in keyword]


@settings(max_examples=60, deadline=None)
@given(scores=distinct_scores)
def test_an_empty_vector_arm_leaves_the_lexical_ranking_as_it_is(scores):
    keyword = [Hit(f"k{i}", s) for i, s in enumerate(sorted(scores, reverse=True))]
    hybrid = fuse_hybrid({"keyword": keyword, "vector": []}, _no_refine([]))
    assert order(hybrid) == order(fuse({"keyword": keyword}))
    assert all("vector" not in slot["arms"] for slot in hybrid.values())


cosine_lists = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30, unique=True)


@settings(max_examples=60, deadline=None)
@given(cosines=cosine_lists, flat_hits=st.integers(10, 40), flat_score=st.floats(0.1, 50.0))
def test_a_flat_lexical_arm_has_no_say_over_the_vector_ranking(cosines, flat_hits, flat_score):
    """Many entries matching the words equally well (margin 0): the dense ranking stands."""
    # cosines all within FLAT_COSINE_SPREAD of each other (0, 2e-16, 1e-308) tell nothing apart
    # either: that case is the flat-cosine rule's (lexical order), tested on its own above
    assume(len(cosines) == 1 or max(cosines) - min(cosines) > FLAT_COSINE_SPREAD)
    vector = [Hit(f"v{i}", c, {"cosine": c}) for i, c in enumerate(sorted(cosines, reverse=True))]
    keyword = [Hit(f"k{i}", flat_score) for i in range(flat_hits)]
    keyword += [Hit(h.id, flat_score) for h in vector[:3]]  # some found by both
    hybrid = order(fuse_hybrid({"keyword": keyword, "vector": vector}, _no_refine(vector)))
    assert hybrid[: len(vector)] == [h.id for h in vector]


@settings(max_examples=60, deadline=None)
@given(cosines=cosine_lists)
def test_an_empty_lexical_arm_leaves_the_vector_ranking_as_it_is(cosines):
    vector = [Hit(f"v{i}", c, {"cosine": c}) for i, c in enumerate(sorted(cosines, reverse=True))]
    hybrid = fuse_hybrid({"keyword": [], "vector": vector}, _no_refine(vector))
    assert order(hybrid) == [h.id for h in vector]


def test_hybrid_shares_add_up_and_the_vector_detail_shows_both_rounds():
    keyword = [Hit("a", 10.0), Hit("b", 1.0)]
    first = [Hit("c", 0.9, {"cosine": 0.9}), Hit("a", 0.5, {"cosine": 0.5})]
    refined = [
        Hit("a", 0.8, {"cosine": 0.8}),
        Hit("c", 0.7, {"cosine": 0.7}),
        Hit("d", 0.6, {"cosine": 0.6}),
    ]
    asked = []
    slots = fuse_hybrid(
        {"keyword": keyword, "vector": first}, lambda head: asked.append(head) or refined
    )
    share = lexical_share(1.0)  # two lexical candidates: peaked
    assert asked == [["a", "c", "b"]]  # the first fused page feeds the feedback
    assert slots["a"]["fused"] == pytest.approx(share * 1.0 + (1 - share) * 0.8)
    assert slots["b"]["fused"] == pytest.approx(share * 0.1 + (1 - share) * 0.6)  # lowest cosine
    assert slots["a"]["arms"]["vector"] == {
        "rank": 1,
        "score": 0.8,
        "cosine": 0.5,
        "rrf": pytest.approx((1 - share) * 0.8),
    }
    assert slots["d"]["arms"]["vector"]["cosine"] == 0.5  # not in the first round: its lowest
    for slot in slots.values():
        assert slot["fused"] == pytest.approx(sum(a["rrf"] for a in slot["arms"].values()))


@pytest.fixture
def linked(ws, now_clock, add, filler):
    filler()
    strong = add("Condor condor tracking collars ordered")
    weak = add("A condor was spotted above the canyon road during the long drive home")
    friend = add("Collar battery supplier contact")
    ws.link(strong, friend, "relates_to", weight=0.7)
    return strong, weak, friend


def test_breakdown_shows_every_stage(ws, linked, no_brevity):
    strong, weak, friend = linked
    result = ws.recall("condor")
    items = by_id(result)
    s_weak = (
        items[weak]["breakdown"]["keyword"]["score"]
        / items[strong]["breakdown"]["keyword"]["score"]
    )
    # the friend, reached from the best hit over an edge of weight 0.7, scores 0.7 of it
    expected = sorted(
        [strong, weak, friend], key=lambda i: -{strong: 1.0, weak: s_weak, friend: 0.7}[i]
    )
    assert ids(result) == expected
    for item in result["items"]:
        b = item["breakdown"]
        assert set(b) >= {"keyword", "graph", "recency", "fused", "rerank", "final", "mmr"}
        assert set(b["rerank"]) >= {
            "decay",
            "recall",
            "importance",
            "tagOverlap",
            "rolledUp",
            "subject",
            "brevity",
            "product",
        }
        arms = [arm for arm in (b["keyword"], b["graph"]) if arm is not None]
        assert b["fused"] == pytest.approx(sum(arm["rrf"] for arm in arms), abs=1e-6)
        assert b["final"] == pytest.approx(b["fused"] * b["rerank"]["product"], rel=1e-6)
        assert item["score"] == b["final"]
    top, friend_b = items[strong]["breakdown"], items[friend]["breakdown"]
    assert top["keyword"]["rank"] == 1 and top["keyword"]["rrf"] == pytest.approx(1.0)
    assert top["graph"] is None  # no neighbour of it matched the query
    assert items[weak]["breakdown"]["graph"] is None
    assert friend_b["keyword"] is None
    assert (friend_b["graph"]["hop"], friend_b["graph"]["via"]) == (1, strong)
    assert friend_b["graph"]["score"] == pytest.approx(0.6 * 0.7)
    assert friend_b["graph"]["rrf"] == pytest.approx(GRAPH_W * 0.6 * 0.7)


def test_hops_zero_ranks_by_the_keyword_arm_alone(ws, linked):
    strong, weak, _friend = linked
    result = by_id(ws.recall("condor", hops=0))
    assert set(result) == {strong, weak}
    assert result[strong]["breakdown"]["fused"] == pytest.approx(1.0)
    assert result[strong]["breakdown"]["graph"] is None


def test_neighbouring_hits_support_each_other(ws, now_clock, add, filler):
    """Two matching entries linked to each other both gain: the keyword share plus the other's
    share passed over the edge."""
    filler()
    a = add("Avocet avocet ringing totals")
    b = add("An avocet was ringed near the old sluice gate on the marsh path today")
    c = add("An avocet landed near the new pier by the harbour wall this week again")
    ws.link(a, b, "relates_to", weight=0.5)
    result = by_id(ws.recall("avocet"))
    kb = result[b]["breakdown"]
    assert kb["graph"]["hop"] == 0 and kb["graph"]["via"] == a
    assert kb["graph"]["score"] == pytest.approx(0.6 * 0.5)  # from the best seed (1.0)
    s_b = kb["keyword"]["rrf"]
    assert result[a]["breakdown"]["graph"]["score"] == pytest.approx(0.6 * 0.5 * s_b, rel=1e-4)
    assert result[c]["breakdown"]["graph"] is None
    assert kb["fused"] > result[c]["breakdown"]["fused"]


# ---- rerank factors ----------------------------------------------------------------------------


def test_a_fresh_unimportant_never_recalled_entry_ranks_by_relevance(ws, now_clock, add, filler):
    filler()
    # at least BREVITY_FULL_CHARS long, as most entries are: short ones get the brevity factor
    rest = (
        ", written down after the morning session at the reserve, with the handler's notes on "
        "the weather, the wind, the lure work and the bird's weight before and after flying"
    )
    texts = [
        "Falcon falcon falcon training log" + rest,
        "One falcon note among many other words about the weather and the sea" + rest,
    ]
    assert min(map(len, texts)) >= T.BREVITY_FULL_CHARS
    best, other = (add(text) for text in texts)
    result = ws.recall("falcon", hops=0)
    assert ids(result) == [best, other]
    neutral = (
        "decay",
        "recall",
        "importance",
        "tagOverlap",
        "rolledUp",
        "subject",
        "brevity",
        "product",
    )
    for item in result["items"]:
        rerank = item["breakdown"]["rerank"]
        assert {k: rerank[k] for k in neutral} == dict.fromkeys(neutral, 1.0)
        assert item["breakdown"]["final"] == item["breakdown"]["fused"]


@pytest.mark.parametrize(
    "volatility, half_life_days, floor",
    [("durable", 365, 0.9), ("state", 30, 0.6), ("volatile", 3, 0.15)],
)
def test_time_decay_halves_towards_the_floor_and_never_below(
    ws, clock, now_clock, add, volatility, half_life_days, floor
):
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
        assert decay_factor(volatility, -5 * DAY_MS) == 1.0  # clock skew: never above 1
        ages = [0, DAY_MS, 30 * DAY_MS, 3650 * DAY_MS, 10**15]
        values = [decay_factor(volatility, age) for age in ages]
        assert values == sorted(values, reverse=True)
        assert all(floor <= v <= 1.0 for v in values)


def test_old_volatile_fact_loses_to_a_fresh_one_but_keeps_its_floor(
    ws, clock, now_clock, add, filler
):
    filler()
    old = add("Ibis sighting counts by the river", volatility="volatile")
    clock.advance(days=100)
    fresh = add("Ibis sighting counts by the canal", volatility="volatile")
    result = ws.recall("ibis sighting counts")
    assert ids(result) == [fresh, old]
    decay = by_id(result)[old]["breakdown"]["rerank"]["decay"]
    assert decay == pytest.approx(T.DECAY_FLOOR["volatile"], abs=1e-6)


def test_importance_raises_the_score_within_its_bound(ws, now_clock, add, filler, no_brevity):
    filler()
    relevant = add("Swift swift swift migration route")
    important = add(
        "A swift flew past the office window during the long afternoon meeting", importance=1.0
    )
    half = add(
        "Someone mentioned a swift in passing while we talked about other topics", importance=0.5
    )
    result = ws.recall("swift", hops=0)
    items = by_id(result)
    assert items[relevant]["breakdown"]["keyword"]["rank"] == 1
    assert items[important]["breakdown"]["keyword"]["rank"] > 1
    assert items[important]["breakdown"]["rerank"]["importance"] == pytest.approx(1.2)
    assert items[half]["breakdown"]["rerank"]["importance"] == pytest.approx(1.1)
    assert items[relevant]["breakdown"]["rerank"]["importance"] == 1.0
    fused = {i: items[i]["breakdown"]["fused"] for i in items}
    assert items[important]["breakdown"]["final"] == pytest.approx(1.2 * fused[important])
    # the boost reorders only within its bound: above the best hit iff 1.2 × fused beats it
    assert (ids(result)[0] == important) is (1.2 * fused[important] > fused[relevant])


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


def test_rolled_up_entries_are_scaled_down(ws, now_clock, add, filler, no_brevity):
    filler()
    rolled = add("Curlew curlew curlew call recordings", tags=["rolled-up"])
    summary = add("Summary: the curlew recordings from spring, merged into one overview note")
    result = ws.recall("curlew", hops=0)
    items = by_id(result)
    assert items[rolled]["breakdown"]["keyword"]["rank"] == 1
    assert items[rolled]["breakdown"]["rerank"]["rolledUp"] == 0.4
    assert items[rolled]["breakdown"]["final"] == pytest.approx(0.4, rel=1e-5)  # 0.4 × the best
    assert items[summary]["breakdown"]["rerank"]["rolledUp"] == 1.0
    assert ids(result) == [summary, rolled]


def test_recall_count_boost_is_logarithmic_and_capped(ws, now_clock, add):
    entry = add("Sandpiper feeding behaviour")
    seen = []
    for _ in range(5):
        seen.append(by_id(ws.recall("sandpiper"))[entry]["breakdown"]["rerank"]["recall"])
    assert seen[0] == 1.0  # never recalled before
    assert seen[1] == pytest.approx(1 + 0.05 * math.log(2), abs=1e-6)
    assert seen[2:] == [pytest.approx(1 + T.RECALL_BOOST_MAX)] * 3  # log1p(2) > 1: capped


def test_all_boosts_together_stay_within_their_bounds(ws, now_clock, add, no_brevity):
    entry = add("Avocet wading study", tags=["avocet"], importance=1.0)
    for _ in range(4):
        ws.recall("avocet")
    rerank = by_id(ws.recall("avocet"))[entry]["breakdown"]["rerank"]
    assert rerank["product"] == pytest.approx(1.05 * 1.2 * 1.15, rel=1e-5)
    assert (
        rerank["product"]
        <= (1 + T.RECALL_BOOST_MAX) * (1 + T.IMPORTANCE_BOOST_MAX) * (1 + T.TAG_OVERLAP_BOOST_MAX)
        + 1e-9
    )


# ---- MMR -------------------------------------------------------------------------------------


def test_mmr_picks_a_distinct_entry_before_a_near_duplicate(ws, now_clock, add, filler):
    filler()
    first = add("The billing deploy pipeline runs every night at two from the main branch")
    second = add(
        "The billing deploy pipeline runs every night at two from the main branch reliably"
    )
    distinct = add(
        "Billing deploy pipeline approvals need a second reviewer from the security "
        "team on weekdays"
    )
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
    floor = T.MMR_SIMILARITY_FLOOR  # 8 of 9 word pairs shared, rescaled
    assert mmr_detail["maxSimilarity"] == pytest.approx((8 / 9 - floor) / (1 - floor), abs=1e-6)
    for item in result["items"]:
        m = item["breakdown"]["mmr"]
        assert m["mmr"] == pytest.approx(0.7 * m["relevance"] - 0.3 * m["maxSimilarity"], abs=1e-5)


def test_mmr_leaves_entries_that_only_share_a_topic_in_relevance_order():
    texts = {
        "a": "the billing deploy pipeline runs nightly from main",
        "b": "the billing deploy pipeline needs a reviewer",  # 3 of 9 pairs: a topic
        "c": "garden watering rota",
    }
    assert 0 < jaccard(shingles(texts["a"]), shingles(texts["b"])) <= T.MMR_SIMILARITY_FLOOR
    picked = mmr([("a", 1.0), ("b", 0.8), ("c", 0.7)], texts, top_k=3)
    assert [i for i, _ in picked] == ["a", "b", "c"]
    assert dict(picked)["b"]["maxSimilarity"] == 0.0


def test_mmr_cost_does_not_grow_with_entry_length():
    """Shingles come from a bounded prefix: a 64 KiB entry is compared like its first chars."""
    head = "zephyr " + " ".join(f"word{i}" for i in range(400))
    long_a = head + " " + " ".join(f"tail{i}" for i in range(9000))
    long_b = head + " " + " ".join(f"other{i}" for i in range(9000))
    assert len(long_a) > 64_000 and long_a[: T.MMR_TEXT_CHARS] == long_b[: T.MMR_TEXT_CHARS]
    assert shingles(long_a) == shingles(long_a[: T.MMR_TEXT_CHARS])
    picked = mmr([("a", 1.0), ("b", 0.9)], {"a": long_a, "b": long_b}, top_k=2)
    assert dict(picked)["b"]["maxSimilarity"] == 1.0  # the same prefix: a copy, as far as MMR sees


def test_mmr_function_directly():
    assert T.MMR_LAMBDA == 0.7
    texts = {
        "a": "red fox jumps over the lazy dog",
        "b": "red fox jumps over the lazy dog",
        "c": "blue whale sings under the cold sea",
        "d": "green frog",
    }
    candidates = [("a", 1.0), ("b", 0.9), ("c", 0.8), ("d", 0.0)]
    picked = mmr(candidates, texts, top_k=4)
    assert [i for i, _ in picked] == ["a", "c", "b", "d"]  # a and b are copies: similarity 1
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
