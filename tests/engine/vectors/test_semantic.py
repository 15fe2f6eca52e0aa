"""Semantic dedup bands and auto-linking, with vectors chosen to land in each band."""

import json

import pytest

from minisphere.engine.vectors.semantic import SemanticSettings
from minisphere.engine.workspace import Workspace
from tests.engine.vectors.helpers import ChosenVectors, at_cosine

BASE = "the base fact"


def bound(tmp_path, clock, table, settings=None):
    provider = ChosenVectors({BASE: at_cosine(1.0), **table})
    return Workspace(
        tmp_path / "s.db",
        clock=clock,
        synchronous="NORMAL",
        embedder=provider,
        vector_settings=settings,
    )


AGAIN = "The base fact, again."  # the same words as BASE ("again" is a stop word)


def link_weight(cosine: float) -> float:
    return max(0.01, (cosine - 0.78) / (1 - 0.78))


@pytest.mark.parametrize(
    "cosine, text, outcome, candidate, linked",
    [
        (0.99, AGAIN, "blocked", False, False),
        (0.95, AGAIN, "blocked", False, False),  # the threshold itself blocks
        (0.94, AGAIN, "stored", True, True),
        (0.85, AGAIN, "stored", True, True),  # the threshold itself tags
        (0.84, AGAIN, "stored", False, True),
        (0.78, AGAIN, "stored", False, True),  # the threshold itself links
        (0.70, AGAIN, "stored", False, False),
        # close by cosine, other words: a new memory, linked through the shared word "base"
        (0.99, "a base layer painted with other colours entirely", "stored", False, True),
    ],
)
def test_vectors_dedup_bands(tmp_path, clock, cosine, text, outcome, candidate, linked):
    ws = bound(tmp_path, clock, {text: at_cosine(cosine)})
    base_id = ws.capture(BASE)["id"]
    result = ws.capture(text)
    assert result["outcome"] == outcome
    if outcome == "blocked":
        assert result["matchId"] == base_id and result["semantic"] is True
        assert ws.get_count()["count"] == 1
    else:
        tags = ws.get_entry(result["id"])["tags"]
        assert ("duplicate-candidate" in tags) is candidate
        edges = ws.connections(result["id"])["items"] if linked else []
        assert bool(ws.connections(base_id)["items"]) is linked
        if linked:
            edge = edges[0]["edge"] if "edge" in edges[0] else edges[0]
            assert edge["type"] == "relates_to" and edge["provenance"] == "inferred"
            assert edge["weight"] == pytest.approx(link_weight(cosine), abs=1e-4)
            metadata = ws.conn.execute("SELECT metadata FROM edges").fetchone()[0]
            assert json.loads(metadata)["cosine"] == pytest.approx(cosine, abs=1e-4)
    ws.close()


@pytest.mark.parametrize(
    "earlier, later",
    [
        ("John: Me too. Talk to you soon!", "John: Me too. Talk to you later!"),
        (
            "Maria: Thanks, John. I definitely will!",
            "John: Got it! Thanks, Maria. I definitely will.",
        ),
        (
            "Caroline: Next month I'm having an LGBTQ art show with my paintings!",
            "Caroline: I'm putting together an LGBTQ art show next month, gonna show my painting",
        ),
    ],
)
def test_vectors_a_turn_close_by_cosine_but_in_other_words_is_stored_not_blocked(
    tmp_path, clock, earlier, later
):
    """What MiniLM called duplicates (cosine ≥ 0.95) in the dev conversations: new utterances."""
    provider = ChosenVectors({earlier: at_cosine(1.0), later: at_cosine(0.97)})
    ws = Workspace(tmp_path / "t.db", clock=clock, synchronous="NORMAL", embedder=provider)
    ws.capture(earlier)
    result = ws.capture(later)
    assert result["outcome"] == "stored" and ws.get_count()["count"] == 2
    ws.close()


def test_vectors_small_talk_close_by_cosine_draws_no_link(tmp_path, clock):
    """Nothing specific in common (every word is in many entries): no relation to record."""
    chatter = [f"Thanks so much for the chat number {i}, talk soon" for i in range(6)]
    provider = ChosenVectors(
        {text: at_cosine(0.80 + 0.01 * i, axis=1 + i % 6) for i, text in enumerate(chatter)}
    )
    ws = Workspace(
        tmp_path / "t.db",
        clock=clock,
        synchronous="NORMAL",
        embedder=provider,
        vector_settings=SemanticSettings(link_cosine=0.5),
    )
    results = [ws.capture(text) for text in chatter]
    assert all(r["outcome"] == "stored" for r in results)
    linked = [r for r in results[4:] if r["autoLinked"]]
    assert linked == []  # "thanks", "chat", "talk", "soon" are in more than 3 entries
    ws.close()


def test_vectors_thresholds_are_configurable(tmp_path, clock):
    settings = SemanticSettings(block_cosine=0.99, candidate_cosine=0.9, link_cosine=0.97)
    ws = bound(tmp_path, clock, {AGAIN: at_cosine(0.96)}, settings)
    base_id = ws.capture(BASE)["id"]
    result = ws.capture(AGAIN)
    assert result["outcome"] == "stored"  # 0.96 < 0.99: not blocked here
    assert "duplicate-candidate" in ws.get_entry(result["id"])["tags"]
    assert result["duplicateCandidateOf"]["id"] == base_id
    assert result["autoLinked"] == []  # 0.96 < 0.97: no link
    ws.close()


def test_vectors_auto_link_takes_the_three_nearest(tmp_path, clock):
    birds = ["heron", "egret", "ibis", "stork"]
    near = {
        f"{bird} sighting": at_cosine(c, axis=i + 1)
        for i, (bird, c) in enumerate(zip(birds, [0.80, 0.82, 0.84, 0.86]))
    }
    newcomer = "heron egret ibis stork census"
    ws = bound(
        tmp_path,
        clock,
        {newcomer: at_cosine(1.0), **near},
        SemanticSettings(block_cosine=1.01, candidate_cosine=1.01),
    )
    ids = {text: ws.capture(text)["id"] for text in near}
    result = ws.capture(newcomer)
    linked = {link["id"] for link in result["autoLinked"]}
    assert linked == {ids["egret sighting"], ids["ibis sighting"], ids["stork sighting"]}
    rows = ws.conn.execute(
        "SELECT provenance, weight FROM edges WHERE src = ? OR dst = ?",
        (result["id"], result["id"]),
    ).fetchall()
    assert len(rows) == 3 and {p for p, _ in rows} == {"inferred"}
    assert sorted(round(w, 4) for _, w in rows) == [
        round(link_weight(c), 4) for c in (0.82, 0.84, 0.86)
    ]
    ws.close()


def test_vectors_auto_link_never_overwrites_an_explicit_edge(tmp_path, clock):
    ws = bound(tmp_path, clock, {"second": at_cosine(0.8)})
    base_id = ws.capture(BASE)["id"]
    ws.update(base_id, BASE)  # a confirmation, vector kept
    second = ws.capture("unrelated words first", tags=[])["id"]
    ws.link(base_id, second, "relates_to", weight=0.3)
    ws.update(second, "second")  # no auto-link on update
    edges = ws.conn.execute("SELECT provenance, weight FROM edges").fetchall()
    assert edges == [("explicit", 0.3)]
    ws.close()


def test_vectors_deprecated_entries_do_not_block(tmp_path, clock):
    text = "a restatement of an old fact"
    ws = bound(tmp_path, clock, {text: at_cosine(0.99)})
    base_id = ws.capture(BASE)["id"]
    ws.set_status(base_id, "deprecated")
    assert ws.capture(text)["outcome"] == "stored"
    ws.close()


def test_vectors_exact_duplicate_keeps_the_engine_answer(vws):
    first = vws.capture("Exactly the same words", source="alice")["id"]
    again = vws.capture("exactly  the same words", source="bob")
    assert again == {"outcome": "blocked", "matchId": first, "confirmed": True}
