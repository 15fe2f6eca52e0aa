"""The dense arm's say on a page whose fusion left the lexical order alone (dense_page.py):
the pool re-scored with the cosine."""

import pytest

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.dense_page import cosine_keys
from minisphere.engine.workspace import Workspace
from tests.engine.vectors.helpers import ChosenVectors, at_cosine

QUERY = "where does the ferry to the island leave"
OTHER_WORDS = "Boats for Skye go from the harbour pier at nine"  # no word in common
MATCHES = [
    "ferry tickets sold out",
    "the ferry was late again today",
    "island weather looks grim for the weekend",
    "we leave early tomorrow morning, before the ferry crowds",
    "my aunt lives on the island near the old ferry landing",
]


def _table() -> dict:
    """The query along e0; the answer in other words close to it; chit-chat turns moderately
    close on other axes (the dense head the lexical arm does not back); the word matches far."""
    table = {QUERY: at_cosine(1.0), OTHER_WORDS: at_cosine(0.8)}
    for i in range(25):
        table[f"chat turn {i}: sounds lovely, see you soon"] = at_cosine(0.5, axis=2 + i % 6)
    for i, text in enumerate(MATCHES):
        table[text] = at_cosine(0.05 + 0.01 * i, axis=3)
    return table


@pytest.fixture
def chat_ws(tmp_path, clock):
    ws = Workspace(
        tmp_path / "page.db", clock=clock, synchronous="NORMAL", embedder=ChosenVectors(_table())
    )
    ids = {text: ws.capture(text)["id"] for text in _table() if text != QUERY}
    yield ws, ids
    ws.close()


def test_the_cosine_rescore_keeps_strong_word_matches_above_every_unmatched_turn(
    chat_ws, monkeypatch
):
    """An unmatched turn's key is at most the weight (cosine ≤ 1); a match whose final score is
    at least that share of the best one's keeps its place above all of them."""
    ws, ids = chat_ws
    items = ws.recall(QUERY, topK=10)["items"]
    finals = {i["id"]: i["breakdown"]["fused"] * i["breakdown"]["rerank"]["product"] for i in items}
    best = max(finals.values())
    rank = {item["id"]: n for n, item in enumerate(items)}
    strong = [i for i in finals if finals[i] >= T.HYBRID_PAGE_COSINE_WEIGHT * best]
    unmatched = [i["id"] for i in items if i["breakdown"]["keyword"] is None]
    assert strong and unmatched and max(rank[i] for i in strong) < min(rank[i] for i in unmatched)
    assert unmatched[0] == ids[OTHER_WORDS]  # the unmatched ones by their cosine
    assert [i["score"] for i in items] == sorted((i["score"] for i in items), reverse=True)


def test_the_page_step_leaves_a_recall_alone_where_fusion_gave_the_dense_arm_a_say(
    vws, monkeypatch
):
    target = vws.capture("The staging database password rotates every 30 days")["id"]
    for i in range(5):
        vws.capture(f"Unrelated note {i} about lunch menus and parking spot {i}")
    shipped = vws.recall("staging database password rotation", topK=4)["items"]
    monkeypatch.setattr(T, "HYBRID_PAGE_COSINE_WEIGHT", 0.0)
    vws.conn.execute("UPDATE entries SET recall_count = 0")
    plain = vws.recall("staging database password rotation", topK=4)["items"]
    assert shipped[0]["id"] == target
    assert [i["id"] for i in shipped] == [i["id"] for i in plain]


def test_cosine_keys_order_by_the_final_score_at_weight_zero_and_break_its_ties_by_cosine(
    monkeypatch,
):
    finals = {"a": 2.0, "b": 1.0, "c": 1.0}
    cosines = {"a": 0.1, "b": 0.2, "c": 0.6}
    monkeypatch.setattr(T, "HYBRID_PAGE_COSINE_WEIGHT", 0.0)
    assert cosine_keys(finals, cosines) == {"a": 1.0, "b": 0.5, "c": 0.5}
    monkeypatch.setattr(T, "HYBRID_PAGE_COSINE_WEIGHT", 0.75)
    keys = cosine_keys(finals, {"a": 0.1, "b": 0.2})  # c has no stored vector: lowest cosine
    assert keys["a"] > keys["b"] > keys["c"]


def test_fusion_reports_the_lexical_share_that_decides_whether_the_page_step_runs():
    from minisphere.engine.retrieval.arms import Hit
    from minisphere.engine.retrieval.fusion import fuse_hybrid

    keyword = [Hit(f"k{i}", 10.0 - i) for i in range(5)]
    unbacked = [Hit(f"v{i}", 0.6 - 0.01 * i) for i in range(20)]  # not one of them matched
    info: dict = {}
    fuse_hybrid({"keyword": keyword, "vector": unbacked}, lambda head: unbacked, info)
    assert info["lexicalShare"] == 1.0 and info["support"] == 0.0
    backed = [Hit(f"k{i}", 0.6 - 0.01 * i) for i in range(5)]
    info = {}
    fuse_hybrid({"keyword": keyword, "vector": backed}, lambda head: backed, info)
    assert info["lexicalShare"] < 1.0 and info["support"] > T.HYBRID_AGREEMENT_HIGH
