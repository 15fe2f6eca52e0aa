"""Supersession hints of the vector binding: a capture restating an earlier entry with a detail
changed is stored, answered with the earlier entry's id, tagged, and listed by getBrief until the
agent confirms it (a `supersedes` link) or dismisses it (unlinking the hint edge). The service
never acts on a hint itself."""

from __future__ import annotations

import pytest

from minisphere.engine.vectors.semantic import SemanticSettings
from minisphere.engine.workspace import Workspace
from tests.engine.vectors.helpers import ChosenVectors, at_cosine

OLD = "The billing service deploys to us-east-1 on Fridays."
NEW = "The billing service deploys to eu-west-1 on Fridays."
NEWER = "The billing service deploys to ap-south-1 on Fridays."
TAG = "supersession-candidate"


def bound(tmp_path, clock, table):
    provider = ChosenVectors({OLD: at_cosine(1.0), **table})
    return Workspace(tmp_path / "h.db", clock=clock, synchronous="NORMAL", embedder=provider)


def hinted(ws) -> list[tuple[str, str]]:
    return [(h["entry"]["id"], h["candidate"]["id"]) for h in ws.get_brief()["revalidate"]]


def test_a_capture_changing_a_detail_is_stored_answered_with_the_hint_and_listed(tmp_path, clock):
    ws = bound(tmp_path, clock, {NEW: at_cosine(0.8)})
    old = ws.capture(OLD)["id"]
    answer = ws.capture(NEW)
    assert answer["outcome"] == "stored"
    assert answer["supersessionHint"] == {
        "id": old,
        "cosine": pytest.approx(0.8, abs=1e-5),
        "before": ["us-east-1"],
        "after": ["eu-west-1"],
    }
    assert TAG in ws.get_entry(answer["id"])["tags"]
    (edge,) = [c["edge"] for c in ws.connections(answer["id"])["items"]]
    assert (edge["type"], edge["provenance"]) == ("relates_to", "inferred")
    assert edge["metadata"]["by"] == "supersession-hint" and edge["metadata"]["replaces"] == old
    # weighed as an auto-link at that cosine: the graph arm reads the two alike
    assert edge["weight"] == pytest.approx(SemanticSettings().link_weight(0.8), abs=1e-4)
    listed = ws.get_brief()["revalidate"]
    assert [(h["entry"]["id"], h["candidate"]["id"], h["before"], h["after"]) for h in listed] == [
        (answer["id"], old, ["us-east-1"], ["eu-west-1"])
    ]
    ws.close()


def test_a_hint_changes_no_ranking_and_no_entry(tmp_path, clock):
    ws = bound(tmp_path, clock, {NEW: at_cosine(0.8)})
    old = ws.capture(OLD)["id"]
    new = ws.capture(NEW)["id"]
    items = ws.recall("billing service deploys Fridays")["items"]
    assert {i["id"] for i in items} >= {old, new}
    assert all(i["supersededBy"] is None for i in items)
    assert (
        ws.get_entry(old)["content"] == OLD
        and ws.get_entry(old)["supersession"]["supersededBy"] is None
    )
    ws.close()


def test_a_near_identical_capture_changing_a_detail_is_not_blocked(tmp_path, clock):
    # at 0.99 the words agree enough for a semantic duplicate; the changed region is a new fact
    ws = bound(tmp_path, clock, {NEW: at_cosine(0.99)})
    old = ws.capture(OLD)["id"]
    answer = ws.capture(NEW)
    assert answer["outcome"] == "stored"
    assert answer["supersessionHint"]["id"] == old
    assert ws.get_count()["count"] == 2
    ws.close()


@pytest.mark.parametrize(
    ("text", "cosine"),
    [
        (NEW, 0.69),  # below the hint cosine: not compared
        ("The search service deploys to eu-west-1 on Fridays.", 0.9),  # another subject
        ("The billing team deploys to eu-west-1 on Fridays.", 0.9),  # another word changed
        ("Billing moved: eu-west-1 is the region now.", 0.9),  # said in other words
    ],
)
def test_no_hint_without_a_restatement_of_the_same_subject(tmp_path, clock, text, cosine):
    ws = bound(tmp_path, clock, {text: at_cosine(cosine)})
    ws.capture(OLD)
    answer = ws.capture(text)
    assert answer["outcome"] == "stored" and "supersessionHint" not in answer
    assert TAG not in ws.get_entry(answer["id"])["tags"]
    assert hinted(ws) == []
    ws.close()


def test_a_chain_of_values_hints_its_latest_not_its_closest(tmp_path, clock):
    # NEWER is at 0.95 of OLD and at 0.76 of NEW
    ws = bound(tmp_path, clock, {NEW: at_cosine(0.8), NEWER: at_cosine(0.95, axis=2)})
    ws.capture(OLD)
    clock.advance(days=1)
    middle = ws.capture(NEW)["id"]
    clock.advance(days=1)
    assert ws.capture(NEWER)["supersessionHint"]["id"] == middle
    ws.close()


def test_linking_supersedes_confirms_and_unlinking_the_hint_edge_dismisses(tmp_path, clock):
    ws = bound(tmp_path, clock, {NEW: at_cosine(0.8), NEWER: at_cosine(0.9)})
    old = ws.capture(OLD)["id"]
    new = ws.capture(NEW)["id"]
    newer = ws.capture(NEWER)["id"]
    assert hinted(ws) == [(newer, new), (new, old)]
    ws.link(new, old, "supersedes")  # confirmed
    assert hinted(ws) == [(newer, new)]
    assert ws.unlink(newer, new, "relates_to")["removed"] is True  # dismissed
    assert hinted(ws) == []
    assert ws.recall("billing service deploys Fridays")["items"][-1]["id"] == old
    ws.close()


def test_a_hint_whose_entry_is_deprecated_is_no_longer_listed(tmp_path, clock):
    ws = bound(tmp_path, clock, {NEW: at_cosine(0.8)})
    ws.capture(OLD)
    new = ws.capture(NEW)["id"]
    ws.set_status(new, "deprecated")
    assert hinted(ws) == []
    ws.close()


def test_without_an_embedder_no_capture_is_hinted(tmp_path, clock):
    ws = Workspace(tmp_path / "plain.db", clock=clock, synchronous="NORMAL")
    ws.capture(OLD)
    answer = ws.capture(NEW)
    assert "supersessionHint" not in answer and TAG not in ws.get_entry(answer["id"])["tags"]
    assert ws.get_brief()["revalidate"] == []
    ws.close()


def test_the_hint_thresholds_are_settings(tmp_path, clock):
    provider = ChosenVectors({OLD: at_cosine(1.0), NEW: at_cosine(0.8)})
    ws = Workspace(
        tmp_path / "s.db",
        clock=clock,
        synchronous="NORMAL",
        embedder=provider,
        vector_settings=SemanticSettings(hint_cosine=0.9),
    )
    ws.capture(OLD)
    assert "supersessionHint" not in ws.capture(NEW)
    ws.close()
