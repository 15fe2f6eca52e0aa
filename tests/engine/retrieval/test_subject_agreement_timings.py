"""The subject factor, the hybrid's agreement floor, the feedback stage's timing,
and the settings the benchmark varies being read at call time."""

import pytest

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.arms import Hit
from minisphere.engine.retrieval.fusion import (
    agreement_floor,
    dense_head_support,
    dense_margin,
    fuse,
    fuse_hybrid,
)
from minisphere.engine.retrieval.query_text import first_term, subject_terms
from minisphere.engine.retrieval.recall import max_rerank_boost
from minisphere.engine.retrieval.rerank import mmr
from tests.engine.retrieval.helpers import FILLER, by_id, ids


def order(slots: dict) -> list[str]:
    return sorted(slots, key=lambda i: -slots[i]["fused"])


# ---- subject factor -------------------------------------------------------------------------------
@pytest.fixture
def chat(ws, now_clock, add):
    """A two-speaker chat: each speaker's name is in more than 35% of the turns (so a question
    naming one drops the name as too common to search)."""
    for i in range(30):
        add(f"Ann: morning walk number {i} around the lake")
        add(f"Bob: thanks Ann, my commute number {i} was slow")
    return {
        "ann": add("Ann: I bake cookies for the neighbours"),
        "bob": add("Bob: I bake bread every Sunday with Ann's recipe"),
    }


def test_a_question_naming_a_common_speaker_ranks_that_speakers_turn_first(ws, chat):
    result = ws.recall("What did Ann bake on Sunday?")
    assert "ann" in result["queryUsed"]["droppedTerms"]  # too common to search
    assert ids(result)[0] == chat["ann"]  # Bob's matches both words
    assert by_id(result)[chat["ann"]]["breakdown"]["rerank"]["subject"] == 1 + T.SUBJECT_BOOST_MAX
    assert by_id(result)[chat["bob"]]["breakdown"]["rerank"]["subject"] == 1.0


def test_the_subject_factor_ignores_words_the_query_searches(ws, now_clock, add):
    """Boosting an entry whose first word the query searches anyway double-counts that word
    (it cost the passage sets 0.04 nDCG@10)."""
    for text in FILLER:
        add(text)
    lamp = add("Lighthouse lamp replaced by the keeper")
    result = ws.recall("lighthouse keeper")
    assert by_id(result)[lamp]["breakdown"]["rerank"]["subject"] == 1.0


def test_subject_terms_are_the_dropped_words_without_stop_words():
    assert subject_terms(["what", "caroline", "did"]) == frozenset({"carolin"})
    assert first_term("  Caroline: hi there") == "carolin"
    assert first_term("...") == ""


def test_the_rerank_pruning_bound_covers_the_subject_factor():
    """The rerank stops reading candidates whose fused score times the largest boost cannot
    reach the pool: a bound without the subject factor would cut boosted turns off."""
    assert max_rerank_boost() >= (1 + T.SUBJECT_BOOST_MAX) * (1 + T.TAG_OVERLAP_BOOST_MAX)


# ---- hybrid: the arms' agreement -------------------------------------------------------------------
def test_agreement_floor_leaves_the_lexical_order_alone_below_low_and_steps_aside_from_high():
    for head_margin in (0.0, 1.0):
        assert agreement_floor(T.HYBRID_AGREEMENT_LOW, head_margin) == 1.0
        assert agreement_floor(T.HYBRID_AGREEMENT_HIGH, head_margin) == 0.0
    middle = (T.HYBRID_AGREEMENT_LOW + T.HYBRID_AGREEMENT_HIGH) / 2
    assert 0.0 < agreement_floor(middle, 1.0) < 1.0


def test_a_flat_dense_head_gets_no_say_between_low_and_high():
    """Inside the band, a dense head that does not stand out from its own arm is chit-chat
    near any question: the lexical order stays, as below LOW."""
    middle = (T.HYBRID_AGREEMENT_LOW + T.HYBRID_AGREEMENT_HIGH) / 2
    assert agreement_floor(middle, T.HYBRID_DENSE_MARGIN_TRUSTED - 0.01) == 1.0
    assert agreement_floor(middle, T.HYBRID_DENSE_MARGIN_TRUSTED) < 1.0


def test_dense_margin_is_how_far_the_best_cosine_stands_above_the_depth_th():
    flat = {f"e{i}": 0.6 for i in range(T.HYBRID_AGREEMENT_DEPTH + 5)}
    assert dense_margin(flat) == 0.0
    peaked = {**flat, "best": 0.9}
    assert dense_margin(peaked) == pytest.approx(1 - 0.6 / 0.9)
    assert dense_margin({}) == 0.0
    assert dense_margin({"a": -0.1, "b": -0.2}) == 0.0  # no positive cosine: nothing stands out


def test_dense_head_support_is_the_lexical_score_of_the_dense_head():
    lexical = {"a": 2.0, "b": 1.0}
    assert dense_head_support(lexical, {"a": 0.9, "b": 0.8}) == pytest.approx(0.75)
    assert dense_head_support(lexical, {"x": 0.9, "y": 0.8}) == 0.0
    assert dense_head_support({}, {"x": 0.9}) == 0.0


def test_a_dense_head_the_lexical_arm_does_not_back_cannot_reorder_the_lexical_ranking():
    """Chit-chat turns close to any question: the vector arm's head is nowhere in the lexical
    arm's hits, so the lexical order stands, and no feedback round is run."""
    keyword = [Hit(f"k{i}", 20.0 - i) for i in range(12)]
    vector = [Hit(f"v{i}", 0.9 - i / 100, {"cosine": 0.9 - i / 100}) for i in range(10)]
    vector.append(Hit("k11", 0.5, {"cosine": 0.5}))
    asked = []
    hybrid = fuse_hybrid(
        {"keyword": keyword, "vector": vector}, lambda head: asked.append(head) or vector
    )
    assert order(hybrid)[:12] == order(fuse({"keyword": keyword}))
    assert asked == []


def test_a_dense_head_the_lexical_arm_backs_still_has_a_say():
    keyword = [Hit(f"k{i}", 10.0 - i / 10) for i in range(12)]  # flat-ish lexical head
    vector = [Hit(f"k{11 - i}", 0.9 - i / 100, {"cosine": 0.9 - i / 100}) for i in range(12)]
    hybrid = fuse_hybrid({"keyword": keyword, "vector": vector}, lambda head: vector)
    assert order(hybrid)[0] == "k11"  # the dense arm's best, backed lexically


# ---- stage timings, settings read per call ----------------------------------------------------------
def test_feedback_time_is_booked_apart_from_the_keyword_stage(ws, chat):
    timings = ws.recall("morning walk around the lake")["timings"]
    for stage in (
        "rewriteMs",
        "keywordMs",
        "feedbackMs",
        "graphMs",
        "fusionMs",
        "rerankMs",
        "hydrateMs",
    ):
        assert timings[stage] >= 0.0, stage


def test_mmr_reads_its_lambda_when_called(monkeypatch):
    """The benchmark varies MMR_LAMBDA through the tuning module: a default bound at import
    would ignore it."""
    texts = {"a": "alpha beta gamma delta", "b": "alpha beta gamma delta", "c": "other words here"}
    pool = [("a", 1.0), ("b", 0.99), ("c", 0.5)]
    monkeypatch.setattr(T, "MMR_LAMBDA", 1.0)
    assert [i for i, _ in mmr(pool, texts, top_k=2)] == ["a", "b"]
    monkeypatch.setattr(T, "MMR_LAMBDA", 0.3)
    assert [i for i, _ in mmr(pool, texts, top_k=2)] == ["a", "c"]


def test_the_graph_arm_follows_edges_from_the_fifteenth_best_keyword_hit(ws, now_clock, add):
    """Twenty seeds (was ten): the reply next to the fifteenth matching turn is pulled in."""
    from minisphere.engine.retrieval.arms import graph_arm
    from minisphere.engine.retrieval.sql_filters import Prefilter

    seeds = [Hit(add(f"zebra sighting number {i}", kind="episodic"), 20.0 - i) for i in range(16)]
    reply = add("that was a lovely afternoon", kind="episodic")
    ws.link(reply, seeds[14].id, "follows", weight=0.5)
    support = {h.id: h.score for h in graph_arm(ws.conn, seeds, 1, Prefilter())}
    assert T.GRAPH_SEED_COUNT >= 15
    assert support.get(reply, 0.0) > 0.0
