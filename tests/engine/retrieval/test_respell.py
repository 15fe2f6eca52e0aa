"""Stand-ins for query words no entry contains (respell.py): the workspace's own vocabulary
supplies a compound's parts or a near spelling; a word the workspace holds is never replaced."""

import pytest

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.respell import stand_ins
from tests.engine.retrieval.helpers import FILLER, ids

# Enough distinct entries for document frequencies to be judged (COMMON_TERM_MIN_ENTRIES).
NOUNS = (
    "kettle lantern ribbon saddle tulip violin walnut anchor basket candle drum easel falcon "
    "glove harbor island jacket kayak ladder magnet napkin orchard pebble quilt rocket scarf "
    "teapot umbrella velvet wagon yacht zipper acorn beacon cactus dolphin emerald feather "
    "granite hammock igloo jasmine koala lemon marble nutmeg"
).split()
SHELF = "Caroline: I keep all the kids' books on the shelf by the window"
GAME = "John: we played that impostor game again, I was caught in two rounds"


@pytest.fixture
def chat(ws, add):
    for noun in NOUNS:
        add(f"Melanie: the {noun} we found at the market was lovely")
    for text in FILLER:
        add(text)
    return add(SHELF), add(GAME)


def test_an_open_domain_question_finds_its_answer_through_a_compounds_parts(ws, chat):
    """The question shares no word with the answer: "bookshelf" is in no entry, but "book" and
    "shelf" are, and the answer holds both."""
    shelf, _ = chat
    result = ws.recall("Would Caroline have Dr. Seuss on her bookshelf?", hops=0)
    assert result["queryUsed"]["standIns"] == {"bookshelf": ["book", "shelf"]}
    assert ids(result)[0] == shelf


def test_a_misspelt_word_is_searched_as_the_workspaces_spelling(ws, chat):
    _, game = chat
    result = ws.recall("which imposter game did John play", hops=0)
    assert result["queryUsed"]["standIns"] == {"imposter": ["impostor"]}
    assert ids(result)[0] == game


def test_without_stand_ins_the_unknown_word_finds_nothing(ws, chat, monkeypatch):
    monkeypatch.setattr(T, "RESPELL_UNKNOWN_WORDS", False)
    result = ws.recall("bookshelf", hops=0)
    assert result["items"] == [] and result["queryUsed"]["standIns"] == {}


def test_a_word_the_workspace_holds_is_never_replaced_and_its_exact_match_ranks_first(
    ws, chat, add
):
    """Once an entry says "bookshelf", the word is searched as it is: no stand-in can lift the
    entries holding only its parts above the exact match."""
    exact = add("Caroline: the new bookshelf arrived today")
    result = ws.recall("Would Caroline have Dr. Seuss on her bookshelf?", hops=0)
    assert result["queryUsed"]["standIns"] == {}
    assert ids(result)[0] == exact


def test_short_words_digits_and_small_workspaces_get_no_stand_ins(ws, add):
    for text in FILLER:
        add(text)
    assert ws.recall("bookshelf")["queryUsed"]["standIns"] == {}  # too small to judge
    assert stand_ins(
        ws.conn, ["sandw", "x2024", "bookshelf"], {"sandw": 0, "x2024": 0, "bookshelf": 3}
    ) == {"sandw": ["sandwich"]}
    assert stand_ins(ws.conn, ["sand"], {"sand": 0}) == {}  # below RESPELL_MIN_CHARS
