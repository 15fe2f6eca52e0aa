"""Query words the stemmer folds onto a stop word ("Ines" -> "in"): searched by their letters,
so a question naming Ines finds Ines, not every entry that says "in"."""

from __future__ import annotations

import math

import pytest

from minisphere.engine.retrieval import query_text
from tests.engine.retrieval.helpers import FILLER, ids

IN_CHATTER = [
    "Lunch in the canteen was great today.",
    "Parking in the north wing is terrible this week.",
    "The printer in the lobby jammed twice this morning.",
    "Book club met in the rooftop garden.",
    "Someone left stickers in every drawer.",
    "The demo in the big room went fine.",
]


@pytest.fixture
def people(ws):
    for text in [*FILLER, *IN_CHATTER]:
        ws.capture(text, kind="episodic")
    return {
        "ines": ws.capture("Ines started a new role at Evergreen Health this month.")["id"],
        "quentin": ws.capture("Since last week Quentin has been working for Evergreen Health.")[
            "id"
        ],
        "ines_home": ws.capture("Ines lives in Turin.")["id"],
    }


def test_a_name_the_stemmer_folds_onto_a_stop_word_finds_only_its_holders(ws, people):
    """Searched as itself, "ines" is the index's "in": every entry saying "in" matched it."""
    result = ws.recall("Who is Ines?")
    assert set(ids(result)) == {people["ines"], people["ines_home"]}
    assert result["queryUsed"]["terms"] == ["ines"]


def test_a_question_naming_such_a_name_ranks_its_statement_first(ws, people):
    """ "Where does Ines work now?": Quentin's statement matches "work"; Ines's holds only her
    name, which weighed as little as "in" and lost to it."""
    result = ws.recall("Where does Ines work now?")
    assert ids(result)[0] == people["ines"]
    first = result["items"][0]["breakdown"]["keyword"]
    total = len(FILLER) + len(IN_CHATTER) + 3  # entries; Ines is in 2 of them
    assert first["bm25"] == pytest.approx(math.log((total - 2 + 0.5) / (2 + 0.5)))


def test_such_a_name_is_kept_however_common_its_stop_word(ws):
    """Distillation judged "ines" by the count of "in", in most entries: it was dropped as too
    common and the question searched "work" alone."""
    for n in range(60):
        ws.capture(f"Note {n}: the meeting in room {n} is booked.", kind="episodic")
    ines = ws.capture("Ines started a new role at Evergreen Health this month.")["id"]
    ws.capture("Since last week Quentin has been working for Evergreen Health.")
    result = ws.recall("Where does Ines work now?")
    assert "ines" in result["queryUsed"]["terms"]
    assert "ines" not in result["queryUsed"]["droppedTerms"]
    assert ids(result)[0] == ines


def test_the_folded_words_are_those_whose_stem_is_a_stop_word():
    assert query_text.stop_folded(["ines", "wes", "wills", "in", "lisbon", "working"]) == [
        "ines",
        "wes",
        "wills",
    ]


def test_only_names_are_searched_by_their_letters():
    """An ordinary word the stemmer folds so ("getting" -> "get") keeps its stem, which finds
    its other forms too; a name past the query's first word is searched by its letters."""
    assert query_text.folded_names("Where does Ines work now?") == {"ines"}
    assert query_text.folded_names("What is Wes getting for Ines?") == {"wes", "ines"}
    assert query_text.folded_names("What is her reason for getting into running?") == set()
    assert query_text.folded_names("Ines lives where?") == set()  # a capital first word
