"""Recall honours `supersedes` (src replaces dst): a replaced entry ranks below its live
replacement, names it, and a chain resolves to its newest live member. Checked on examples and,
with hypothesis, on random replacement graphs against a plain model of the rule."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minisphere.engine.clock import ManualClock
from minisphere.engine.workspace import Workspace
from minisphere.errors import SupersessionCycle
from tests.engine.helpers import snapshot
from tests.engine.retrieval.helpers import FILLER, ids

OLD = "The billing service deploys to region us-east-1 on Fridays"
NEW = "Billing moved: eu-west-1 is the region now"
QUERY = "billing service deploys region Fridays"


@pytest.fixture
def billing(ws, clock):
    for text in FILLER:
        ws.capture(text)
    old = ws.capture(OLD)["id"]
    clock.advance(days=7)
    new = ws.capture(NEW)["id"]
    return old, new


def test_a_replaced_fact_ranks_below_its_replacement_though_its_words_match_better(ws, billing):
    old, new = billing
    assert ids(ws.recall(QUERY, hops=0))[0] == old  # the words alone favour the old fact
    ws.link(new, old, "supersedes")
    for hops in (0, 1):  # with or without the graph arm following the edge
        order = ids(ws.recall(QUERY, hops=hops))
        assert order.index(new) < order.index(old)


def test_the_answer_names_the_replacement_and_the_breakdown_the_factor(ws, billing):
    old, new = billing
    ws.link(new, old, "supersedes")
    items = {item["id"]: item for item in ws.recall(QUERY)["items"]}
    assert items[old]["supersededBy"] == new and items[new]["supersededBy"] is None
    old_rerank, new_rerank = items[old]["breakdown"]["rerank"], items[new]["breakdown"]["rerank"]
    assert old_rerank["superseded"] < 1.0 and new_rerank["superseded"] == 1.0
    for item in items.values():  # the factor is part of the product that made the score
        breakdown = item["breakdown"]
        assert math.isclose(breakdown["fused"] * breakdown["rerank"]["product"], item["score"])
    assert items[old]["score"] < items[new]["score"]


def test_a_deprecated_replacement_no_longer_outranks_what_it_replaced(ws, billing):
    old, new = billing
    ws.link(new, old, "supersedes")
    ws.set_status(new, "deprecated")
    item = ws.recall(QUERY, hops=0)["items"][0]
    assert item["id"] == old and item["supersededBy"] is None
    assert item["breakdown"]["rerank"]["superseded"] == 1.0


def test_a_chain_resolves_to_its_newest_live_member(ws, clock):
    a = ws.capture("Team lunch is on Tuesday at noon")["id"]
    clock.advance(days=1)
    b = ws.capture("Team lunch is now on Wednesday at noon")["id"]
    clock.advance(days=1)
    c = ws.capture("Team lunch moves to Thursday at one")["id"]
    ws.link(b, a, "supersedes")
    ws.link(c, b, "supersedes")
    assert ws.get_entry(a)["supersession"] == {
        "supersededBy": c,
        "chain": [a, b, c],
        "supersedes": [],
    }
    assert ws.connections(b)["supersession"] == {
        "supersededBy": c,
        "chain": [b, c],
        "supersedes": [a],
    }
    ws.set_status(c, "deprecated")
    assert ws.get_entry(a)["supersession"]["supersededBy"] == b
    ws.set_status(c, "canonical")
    ws.set_status(b, "deprecated")  # a deprecated member in between still carries the chain
    assert ws.get_entry(a)["supersession"]["chain"] == [a, b, c]
    ws.forget(c)
    assert ws.get_entry(a)["supersession"]["supersededBy"] is None


def test_a_link_closing_a_cycle_is_refused_and_changes_nothing(ws):
    a, b, c = (ws.capture(f"version {n} of the deploy rule")["id"] for n in ("one", "two", "three"))
    ws.link(b, a, "supersedes")
    ws.link(c, b, "supersedes")
    before = snapshot(ws)
    for src, dst in ((a, c), (a, b)):
        with pytest.raises(SupersessionCycle, match="already supersedes"):
            ws.link(src, dst, "supersedes")
    assert snapshot(ws) == before
    # the same edge again is an update, not a new cycle; other types may run backwards
    assert ws.link(c, b, "supersedes", weight=0.5)["created"] is False
    assert ws.link(a, c, "caused_by")["created"] is True


def test_update_keeps_one_entry_with_revisions_and_no_replacement(ws):
    entry = ws.capture(OLD)["id"]
    ws.update(entry, NEW)
    detail = ws.get_entry(entry)
    assert detail["revisionCount"] == 1 and detail["supersession"]["supersededBy"] is None
    (item,) = ws.recall("billing region")["items"]
    assert item["id"] == entry and item["supersededBy"] is None
    assert item["breakdown"]["rerank"]["superseded"] == 1.0


# ---- random replacement graphs against a model -------------------------------------------------
WORDS = ["ledger", "rollout", "quota", "mirror", "window", "pager", "budget", "cutover"]


@st.composite
def replacement_graphs(draw):
    """n entries, a DAG of `supersedes` edges (newer -> older in a random order of age), and
    a fate per entry."""
    n = draw(st.integers(2, 7))
    age = draw(st.permutations(range(n)))  # age[i]: position of entry i in the DAG's order
    pairs = [(i, j) for i in range(n) for j in range(n) if age[i] > age[j]]
    edges = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=10)) if pairs else []
    fates = draw(
        st.lists(
            st.sampled_from(["live", "live", "deprecated", "forgotten"]), min_size=n, max_size=n
        )
    )
    words = draw(st.lists(st.sampled_from(WORDS), min_size=n, max_size=n))
    return n, edges, fates, words


def model_heads(n, edges, fates, created):
    """What each remaining entry resolves to: the live entries that replace it (forgotten ones
    take their edges with them), and among those without a live replacement, the newest."""
    gone = {i for i in range(n) if fates[i] == "forgotten"}
    newer = {
        i: [s for s, d in edges if d == i and s not in gone and d not in gone] for i in range(n)
    }

    def reach(i):
        seen, stack = set(), list(newer[i])
        while stack:
            node = stack.pop()
            if node not in seen:
                seen.add(node)
                stack.extend(newer[node])
        return {s for s in seen if fates[s] == "live"}

    live_above = {i: reach(i) for i in range(n) if i not in gone}
    heads = {}
    for i, above in live_above.items():
        tops = [s for s in above if not live_above[s]]
        heads[i] = max(tops, key=lambda s: (created[s][0], created[s][1])) if tops else None
    return live_above, heads


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=replacement_graphs(), hops=st.sampled_from([0, 1]))
def test_random_replacement_graphs_rank_and_resolve_as_the_model_says(graph, hops):
    n, edges, fates, words = graph
    with tempfile.TemporaryDirectory() as folder:
        clock = ManualClock()
        ws = Workspace(Path(folder) / "ws.db", clock=clock, synchronous="OFF")
        try:
            for text in FILLER:
                ws.capture(text)
            entry_ids, created = [], {}
            for i in range(n):
                clock.advance(ms=1000 * (i % 3))  # some entries share a creation time
                entry_ids.append(ws.capture(f"Status of the {words[i]} plan, revision {i}")["id"])
                created[i] = (clock.now_ms(), entry_ids[-1])
            for src, dst in edges:
                ws.link(entry_ids[src], entry_ids[dst], "supersedes")
            for i, fate in enumerate(fates):
                if fate == "deprecated":
                    ws.set_status(entry_ids[i], "deprecated")
                elif fate == "forgotten":
                    ws.forget(entry_ids[i])
            live_above, heads = model_heads(n, edges, fates, created)
            index_of = {entry_id: i for i, entry_id in enumerate(entry_ids)}
            found = ws.recall("status plan revision", topK=50, hops=hops)["items"]
            items = [(index_of[item["id"]], item) for item in found if item["id"] in index_of]
            answered = [i for i, _ in items]
            assert sorted(answered) == [i for i in range(n) if fates[i] == "live"]
            for i, item in items:
                want = heads[i]
                assert item["supersededBy"] == (None if want is None else entry_ids[want])
            position = {i: p for p, i in enumerate(answered)}
            for i in answered:
                for above in live_above[i]:
                    assert position[above] < position[i], (i, above, answered)
            for i in range(n):
                if fates[i] != "forgotten":
                    chain = ws.get_entry(entry_ids[i])["supersession"]
                    assert chain["supersededBy"] == (
                        None if heads[i] is None else entry_ids[heads[i]]
                    )
                    assert chain["chain"][0] == entry_ids[i] and chain["chain"][-1] == (
                        entry_ids[i] if heads[i] is None else entry_ids[heads[i]]
                    )
        finally:
            ws.close()


def test_a_cycle_stored_before_the_rule_has_no_head_and_recall_still_answers(ws, clock):
    a = ws.capture("Release train leaves on Tuesday")["id"]
    b = ws.capture("Release train leaves on Thursday")["id"]
    with ws.transaction() as conn:  # what a file written before 0.3 may hold
        for src, dst in ((a, b), (b, a)):
            conn.execute(
                "INSERT INTO edges(src, dst, type, weight, provenance, created_at, updated_at) "
                "VALUES (?, ?, 'supersedes', 1.0, 'explicit', 0, 0)",
                (src, dst),
            )
    items = ws.recall("release train leaves")["items"]
    assert {i["id"] for i in items} == {a, b}
    assert all(
        i["supersededBy"] is None and i["breakdown"]["rerank"]["superseded"] == 1 for i in items
    )
    assert ws.get_entry(a)["supersession"] == {
        "supersededBy": None,
        "chain": [a],
        "supersedes": [b],
    }


def test_with_a_vector_binding_the_replacement_still_comes_first(tmp_path, clock):
    from tests.engine.vectors.helpers import ChosenVectors, at_cosine

    query = "billing service deploys region Fridays"
    vectors = ChosenVectors({query: at_cosine(1.0), OLD: at_cosine(0.95), NEW: at_cosine(0.2, 2)})
    ws = Workspace(tmp_path / "bound.db", clock=clock, synchronous="NORMAL", embedder=vectors)
    try:
        for text in FILLER:
            ws.capture(text)
        old, new = ws.capture(OLD)["id"], ws.capture(NEW)["id"]
        assert ids(ws.recall(query, hops=0))[0] == old  # words and cosine both favour it
        ws.link(new, old, "supersedes")
        result = ws.recall(query, hops=0)
        assert result["queryUsed"]["arms"].get("vector")
        order = ids(result)
        assert order.index(new) < order.index(old)
    finally:
        ws.close()
