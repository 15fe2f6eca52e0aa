"""The name factor: a query that searches for a name ranks the entries holding it above those
matching only its other words, and a query naming nothing is left alone."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.query_text import fold, query_names
from minisphere.engine.retrieval.rerank import Focus, name_factor
from tests.engine.retrieval.helpers import FILLER


def test_a_statement_without_the_asked_name_does_not_come_first(ws):
    for text in FILLER:
        ws.capture(text)
    # "work" matches the other statement by its stem; the asked one holds only the name
    other = ws.capture("Since last week Quentin has been working for Evergreen Health.")["id"]
    wanda = ws.capture("Wanda started a new role at Foxglove Games this month.")["id"]
    items = ws.recall("Where does Wanda work now?")["items"]
    first = items[0]
    assert first["id"] != other and "Wanda" in first["content"]
    ranked = [i["id"] for i in items]
    assert wanda in ranked
    by_id = {i["id"]: i for i in items}
    assert by_id[other]["breakdown"]["rerank"]["name"] == pytest.approx(T.NAME_MISSING_FACTOR)
    assert by_id[wanda]["breakdown"]["rerank"]["name"] == 1.0


def test_a_query_naming_nothing_gets_no_name_factor(ws):
    for text in FILLER:
        ws.capture(text)
    items = ws.recall("where is the printer")["items"]
    assert items and all(i["breakdown"]["rerank"]["name"] == 1.0 for i in items)


@pytest.mark.parametrize(
    ("query", "searched", "names"),
    [
        ("Where does Wanda work now?", ["wanda", "work"], {"wanda"}),
        ("Wanda works where?", ["wanda", "work"], set()),  # the first word: any question's
        ("What did Caroline do in March?", ["caroline"], {"caroline"}),  # "march": a time phrase
        ("What did Caroline research?", ["research"], set()),  # too common to search
        ("Which city is Inès based in?", ["ines", "city", "based"], {"ines"}),
        ("What did Ann bake on Sunday?", ["bake", "sunday"], set()),  # a day is no name
    ],
)
def test_query_names_are_its_searched_capitalised_words_past_the_first(query, searched, names):
    assert query_names(query, searched) == names


@given(st.sampled_from(["ines", "wanda", "o'neil"]), st.text(max_size=60))
def test_an_entry_holding_the_name_as_a_whole_word_is_not_discounted(name, around):
    focus = Focus(frozenset(), frozenset({fold(name)}))
    text = f"{around} {name.title()} {around}"
    assert name_factor(focus, {"prefix": text}) == 1.0
    assert name_factor(focus, {"prefix": f"{around}x{name}x"}) in (1.0, T.NAME_MISSING_FACTOR)
