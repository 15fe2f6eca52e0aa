"""The brevity factor: a short entry's word match counts for less (rerank.py, tuning.py)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.rerank import (
    Focus,
    brevity_factor,
    lexical_part,
    rerank_factors,
    rerank_product,
)
from tests.engine.retrieval.helpers import FILLER, NOW, by_id, ids

GREETING = "Bob: Hey Ann! Pottery class tonight, right? See you there!"
SUBSTANTIVE = (
    "Bob: The pottery class tonight is in the old school hall, so bring the apron and "
    "the glaze you mixed on Sunday; the class will fire the two bowls that cracked in "
    "the kiln, and then the teacher shows the pottery wheel"
)


@pytest.fixture
def greeting_and_turn(ws, now_clock, add):
    for text in FILLER:
        add(text)
    return add(GREETING, kind="episodic"), add(SUBSTANTIVE, kind="episodic")


def test_a_short_greeting_does_not_outrank_a_substantive_turn_with_the_same_match(
    ws, greeting_and_turn, monkeypatch
):
    """Both match "pottery class" (the turn uses each word twice), yet BM25's length
    normalisation puts the greeting first; the brevity factor puts the turn that says something
    first."""
    greeting, turn = greeting_and_turn
    assert len(GREETING) < T.BREVITY_FULL_CHARS <= len(SUBSTANTIVE)
    result = ws.recall("pottery class", hops=0)
    assert ids(result) == [turn, greeting]
    items = by_id(result)
    assert items[greeting]["breakdown"]["keyword"]["rank"] == 1  # the words alone prefer it
    brevity = items[greeting]["breakdown"]["rerank"]["brevity"]
    assert brevity == pytest.approx((len(GREETING) / T.BREVITY_FULL_CHARS) ** T.BREVITY_EXPONENT)
    assert items[turn]["breakdown"]["rerank"]["brevity"] == 1.0
    for item in result["items"]:  # the factor is part of the product the score shows
        b = item["breakdown"]
        assert b["final"] == pytest.approx(b["fused"] * b["rerank"]["product"], rel=1e-9)

    monkeypatch.setattr(T, "BREVITY_FULL_CHARS", 0)  # off: the failure it guards
    ws.conn.execute("UPDATE entries SET recall_count = 0")
    assert ids(ws.recall("pottery class", hops=0)) == [greeting, turn]


def test_a_short_fact_is_not_ranked_below_a_longer_entry_with_the_same_match(
    ws, now_clock, add, monkeypatch
):
    """Facts are short by design: "Wanda lives in Lisbon." matches a question about Wanda as
    well as a longer remark that names her (BM25 even prefers it, being shorter), and the
    brevity discount, meant for greetings, put the remark first."""
    for text in FILLER:
        add(text)
    fact = add("Wanda lives in Lisbon.", kind="semantic")
    remark = add(
        "Wanda said the coffee machine in the north wing is broken again today.", kind="semantic"
    )
    turn = add("Wanda: see you at the canteen!", kind="episodic")
    result = ws.recall("wanda", hops=0)
    assert ids(result)[0] == fact
    items = by_id(result)
    assert items[fact]["breakdown"]["rerank"]["brevity"] == 1.0
    assert items[remark]["breakdown"]["rerank"]["brevity"] == 1.0
    assert items[turn]["breakdown"]["rerank"]["brevity"] < 1.0  # an episode still is discounted

    monkeypatch.setattr(T, "BREVITY_KINDS", frozenset({"episodic", "semantic"}))  # the failure
    ws.conn.execute("UPDATE entries SET recall_count = 0")
    assert ids(ws.recall("wanda", hops=0))[0] == remark


def test_browsing_without_searchable_words_does_not_discount_short_entries(ws, clock, add):
    """A time phrase or a tag alone lists entries newest first: there is no match to discount,
    so a short entry keeps its place."""
    clock.set(NOW - 3_600_000)
    long_one = add(SUBSTANTIVE, tags=["pottery"], kind="episodic")
    clock.set(NOW)
    short_one = add(GREETING, tags=["pottery"], kind="episodic")
    result = ws.recall("?", tag="pottery")
    assert ids(result) == [short_one, long_one]
    assert by_id(result)[short_one]["breakdown"]["rerank"]["brevity"] == 1.0


def test_the_rerank_reads_the_length_up_to_the_longest_cutoff_tried():
    """The arms read a fixed prefix of the content: a cutoff past it would see every long
    entry as RERANK_PREFIX_CHARS long."""
    assert 0 < T.BREVITY_FULL_CHARS <= T.RERANK_PREFIX_CHARS


def _row(chars: int, kind: str = "episodic") -> dict:
    return {
        "updatedAt": 0,
        "recallCount": 0,
        "importance": 0.0,
        "volatility": "durable",
        "tags": [],
        "prefix": "x" * min(chars, T.RERANK_PREFIX_CHARS),
        "kind": kind,
    }


@given(st.integers(0, 2 * T.RERANK_PREFIX_CHARS), st.floats(0.0, 1.0))
def test_a_fact_of_any_length_keeps_its_whole_match(chars, lexical):
    """Only episodes are discounted: a semantic entry's factor is 1 however short."""
    assert "semantic" not in T.BREVITY_KINDS
    assert brevity_factor(_row(chars, "semantic"), {"pottery"}, lexical) == 1.0


@given(
    st.integers(0, 2 * T.RERANK_PREFIX_CHARS),
    st.integers(0, 2 * T.RERANK_PREFIX_CHARS),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
)
def test_brevity_is_bounded_and_monotone(short, long, lexical_a, lexical_b):
    """In (0, 1]; 1 from BREVITY_FULL_CHARS on; never lower for a longer entry; never lower
    where the lexical arms gave less of the fused score (it discounts their part only)."""
    short, long = sorted((short, long))
    low, high = sorted((lexical_a, lexical_b))
    terms = {"pottery"}
    for chars in (short, long):
        for lexical in (low, high):
            value = brevity_factor(_row(chars), terms, lexical)
            assert 0.0 < value <= 1.0
            if chars >= T.BREVITY_FULL_CHARS or lexical == 0.0:
                assert value == 1.0
    assert brevity_factor(_row(short), terms, high) <= brevity_factor(_row(long), terms, high)
    assert brevity_factor(_row(short), terms, high) <= brevity_factor(_row(short), terms, low)
    assert brevity_factor(_row(short), set(), high) == 1.0  # no searchable words


@given(st.integers(0, T.RERANK_PREFIX_CHARS), st.floats(0.0, 1.0))
def test_the_fast_product_equals_the_breakdowns_product(chars, lexical):
    """recall ranks by rerank_product and shows rerank_factors: they must agree."""
    row = _row(chars)
    factors = rerank_factors(row, 0, {"pottery"}, Focus(), lexical)
    assert rerank_product(row, 0, {"pottery"}, Focus(), lexical) == pytest.approx(
        factors["product"], rel=1e-12
    )


@given(st.floats(0.0, 10.0), st.floats(0.0, 10.0))
def test_lexical_part_is_the_share_the_vector_arm_did_not_give(lexical, vector):
    slot = {
        "fused": lexical + vector,
        "arms": {"keyword": {"rrf": lexical}, "vector": {"rrf": vector}},
    }
    part = lexical_part(slot)
    assert 0.0 <= part <= 1.0
    if lexical + vector > 0:
        assert part == pytest.approx(lexical / (lexical + vector), abs=1e-9)
    assert lexical_part({"fused": 1.0, "arms": {"keyword": {"rrf": 1.0}}}) == 1.0
