"""A bound recall whose query names a word the workspace is full of (a conversation's speaker)
keeps the lexical order: the subject factor ranks that subject's entries, the cosine cannot."""

import pytest

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.arms import Hit
from minisphere.engine.retrieval.fusion import fuse_hybrid
from minisphere.engine.workspace import Workspace
from tests.engine.vectors.helpers import ChosenVectors, at_cosine

KEYWORD = [Hit(f"k{i}", 10.0 - 0.1 * i) for i in range(12)]  # a flat head: margin rule gives 0
# the dense arm backs the lexical head (support far above HYBRID_AGREEMENT_HIGH) but orders it
# the other way round: with a say, it reverses the page
DENSE = [Hit(f"k{i}", 0.5 + 0.03 * i) for i in reversed(range(12))]


def _order(names_subject: bool) -> tuple[list[str], dict]:
    info: dict = {}
    slots = fuse_hybrid(
        {"keyword": KEYWORD, "vector": DENSE}, lambda head: DENSE, info, names_subject=names_subject
    )
    return list(slots), info


def test_a_query_naming_a_subject_keeps_the_lexical_order_where_the_dense_arm_had_a_say():
    order, info = _order(names_subject=False)
    assert info["lexicalShare"] < 1.0 and not info["subjectLed"]
    assert order[0] != "k0"  # the dense arm reordered it
    order, info = _order(names_subject=True)
    assert info["lexicalShare"] == 1.0 and info["subjectLed"]
    assert order == [h.id for h in KEYWORD]


def test_the_subject_rule_can_be_switched_off(monkeypatch):
    monkeypatch.setattr(T, "HYBRID_SUBJECT_LEXICAL_LED", False)
    _, info = _order(names_subject=True)
    assert info["lexicalShare"] < 1.0 and not info["subjectLed"]


NOUNS = (
    "kettle lantern ribbon saddle tulip violin walnut anchor basket candle drum easel "
    "falcon glove harbor island jacket kayak ladder magnet napkin orchard pebble quilt "
    "rocket scarf teapot umbrella velvet wagon"
).split()


@pytest.fixture
def chat(tmp_path, clock):
    """60 turns, half of them Ann's: "ann" is in more than COMMON_TERM_DOC_RATIO of the entries;
    two of each speaker's turns are about the garden, Bob's closer to the query's vector."""
    table = {}
    for i, noun in enumerate(NOUNS):
        about = "the garden" if i < 2 else f"my {noun}"
        table[f"Ann: {about} {noun} looks fine"] = at_cosine(0.6 if i < 2 else 0.1, axis=2)
        table[f"Bob: {about} {noun}s look odd"] = at_cosine(0.9 if i < 2 else 0.1, axis=3)
    ws = Workspace(
        tmp_path / "chat.db", clock=clock, synchronous="NORMAL", embedder=ChosenVectors(table)
    )
    for text in table:
        ws.capture(text)
    yield ws
    ws.close()


def test_recall_reports_a_subject_led_fusion_only_for_a_query_naming_the_subject(chat):
    named = chat.recall("what does Ann say about the garden")
    assert "ann" in named["queryUsed"]["droppedTerms"]
    fusion = named["queryUsed"]["fusion"]
    assert fusion["subjectLed"] and fusion["lexicalShare"] == 1.0 and fusion["lexicalLed"]
    assert named["items"][0]["content"].startswith("Ann:")
    plain = chat.recall("the garden")
    assert not plain["queryUsed"]["fusion"]["subjectLed"]
