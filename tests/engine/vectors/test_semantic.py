"""Semantic dedup bands and auto-linking, with vectors chosen to land in each band."""
import pytest

from minisphere import Workspace
from minisphere.engine.vectors.semantic import SemanticSettings
from tests.engine.vectors.helpers import ChosenVectors, at_cosine

BASE = "the base fact"


def bound(tmp_path, clock, table, settings=None):
    provider = ChosenVectors({BASE: at_cosine(1.0), **table})
    return Workspace(tmp_path / "s.db", clock=clock, synchronous="NORMAL", embedder=provider,
                     vector_settings=settings)


@pytest.mark.parametrize("cosine, outcome, candidate, linked", [
    (0.99, "blocked", False, False),
    (0.95, "blocked", False, False),     # the threshold itself blocks
    (0.94, "stored", True, True),
    (0.85, "stored", True, True),        # the threshold itself tags
    (0.84, "stored", False, True),
    (0.78, "stored", False, True),       # the threshold itself links
    (0.70, "stored", False, False),
])
def test_vectors_dedup_bands(tmp_path, clock, cosine, outcome, candidate, linked):
    text = f"a restatement at cosine {cosine}"
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
            assert edge["weight"] == pytest.approx(cosine, abs=1e-4)
    ws.close()


def test_vectors_thresholds_are_configurable(tmp_path, clock):
    text = "a near restatement"
    settings = SemanticSettings(block_cosine=0.99, candidate_cosine=0.9, link_cosine=0.97)
    ws = bound(tmp_path, clock, {text: at_cosine(0.96)}, settings)
    base_id = ws.capture(BASE)["id"]
    result = ws.capture(text)
    assert result["outcome"] == "stored"                        # 0.96 < 0.99: not blocked here
    assert "duplicate-candidate" in ws.get_entry(result["id"])["tags"]
    assert result["duplicateCandidateOf"]["id"] == base_id
    assert result["autoLinked"] == []                           # 0.96 < 0.97: no link
    ws.close()


def test_vectors_auto_link_takes_the_three_nearest(tmp_path, clock):
    near = {f"neighbour {i}": at_cosine(c, axis=i + 1) for i, c in enumerate([0.80, 0.82, 0.84, 0.86])}
    ws = bound(tmp_path, clock, {"the newcomer": at_cosine(1.0), **near},
               SemanticSettings(block_cosine=1.01, candidate_cosine=1.01))
    ids = {text: ws.capture(text)["id"] for text in near}
    result = ws.capture("the newcomer")
    linked = {link["id"] for link in result["autoLinked"]}
    assert linked == {ids["neighbour 1"], ids["neighbour 2"], ids["neighbour 3"]}
    rows = ws.conn.execute("SELECT provenance, weight FROM edges WHERE src = ? OR dst = ?",
                           (result["id"], result["id"])).fetchall()
    assert len(rows) == 3 and {p for p, _ in rows} == {"inferred"}
    assert sorted(round(w, 4) for _, w in rows) == [0.82, 0.84, 0.86]
    ws.close()


def test_vectors_auto_link_never_overwrites_an_explicit_edge(tmp_path, clock):
    ws = bound(tmp_path, clock, {"second": at_cosine(0.8)})
    base_id = ws.capture(BASE)["id"]
    ws.update(base_id, BASE)  # a confirmation, vector kept
    second = ws.capture("unrelated words first", tags=[])["id"]
    ws.link(base_id, second, "relates_to", weight=0.3)
    ws.update(second, "second")                                 # no auto-link on update
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
