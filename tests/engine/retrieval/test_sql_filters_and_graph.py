"""Prefilters (kind, tag, always-on exclusions) and the graph arm (BFS over edges)."""

import pytest

from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.arms import Hit, graph_arm
from minisphere.engine.retrieval.sql_filters import Prefilter
from tests.engine.retrieval.helpers import by_id, ids

# ---- prefilters --------------------------------------------------------------------------------


def test_kind_filter(ws, now_clock, add):
    event = add("Standup: rollout of the search feature slipped", kind="episodic")
    fact = add("The search feature uses FTS5", kind="semantic")
    assert ids(ws.recall("search feature", kind="episodic")) == [event]
    assert ids(ws.recall("search feature", kind="semantic")) == [fact]
    assert set(ids(ws.recall("search feature"))) == {event, fact}


def test_tag_filter_is_normalized(ws, now_clock, add):
    tagged = add("Search feature design notes", tags=["Project X"])
    add("Search feature retro", tags=["project-y"])
    add("Search feature without tags")
    result = ws.recall("search feature", tag="  PROJECT   x ")
    assert ids(result) == [tagged]
    assert result["queryUsed"]["filters"] == {"kind": None, "tag": "project-x"}


def test_tag_filter_with_a_query_of_no_words_browses_the_tag_newest_first(
    ws, clock, now_clock, add
):
    first = add("Alpha design", tags=["proj"])
    clock.advance(seconds=1)
    second = add("Beta design", tags=["proj"])
    add("Gamma design")
    result = ws.recall("?", tag="proj")
    assert ids(result) == [second, first]
    assert result["queryUsed"]["arms"] == {"recency": 2}


def test_filters_combine(ws, now_clock, add):
    both = add("Search ranking incident", kind="episodic", tags=["search"])
    add("Search ranking fact", kind="semantic", tags=["search"])
    add("Search ranking meeting", kind="episodic")
    assert ids(ws.recall("search ranking", kind="episodic", tag="search")) == [both]


@pytest.fixture
def hidden(ws, now_clock, add):
    """A visible seed plus four hidden entries all matching 'lighthouse' and linked to it."""
    seed = add("Lighthouse keeper schedule for the winter")
    deprecated = add("Lighthouse keeper schedule, old version", status="deprecated")
    later_deprecated = add("Lighthouse lamp maintenance log")
    ws.set_status(later_deprecated, "deprecated")
    auto = add("Lighthouse mentions spike on Mondays", tags=["auto-pattern"])
    auto_mixed = add("Lighthouse visitor count pattern", tags=["Auto-Pattern", "stats"])
    hidden_ids = [deprecated, later_deprecated, auto, auto_mixed]
    for other in hidden_ids:
        ws.link(seed, other, "relates_to", weight=1.0)
    return seed, hidden_ids


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"hops": 0},
        {"hops": 3},
        {"topK": 50, "full": True},
        {"tag": "stats"},
        {"kind": "semantic"},
    ],
)
def test_deprecated_and_auto_pattern_entries_never_come_back(ws, hidden, options):
    seed, hidden_ids = hidden
    result = ws.call("recall", {"query": "lighthouse keeper lamp visitor pattern", **options})
    assert not set(ids(result)) & set(hidden_ids)
    if "tag" not in options:
        assert ids(result) == [seed]


def test_hidden_entries_are_not_browsed_either(ws, hidden):
    seed, _hidden_ids = hidden
    assert ids(ws.recall("what happened today?")) == [seed]
    assert ids(ws.recall("?", tag="stats")) == []


def test_draft_entries_are_returned(ws, now_clock, add):
    draft = add("Lighthouse draft proposal", status="draft")
    assert ids(ws.recall("lighthouse proposal")) == [draft]


# ---- graph arm -------------------------------------------------------------------------------


@pytest.fixture
def chain(ws, now_clock, add, filler):
    """seed (keyword 'kestrel') -w=0.5- one -w=0.8- two -w=1.0- three; only seed has the word."""
    filler()
    seed = add("Kestrel is the codename of the ingestion service")
    one = add("Ingestion runs on the batch cluster in region west")
    two = add("The batch cluster is owned by the platform group")
    three = add("Platform group on-call rota lives in the wiki")
    ws.link(seed, one, "relates_to", weight=0.5)
    ws.link(one, two, "part_of_project", weight=0.8)
    ws.link(two, three, "caused_by", weight=1.0)
    return seed, one, two, three


def test_one_hop_reaches_a_linked_entry_without_keyword_match(ws, chain):
    seed, one, _two, _ = chain
    assert ids(ws.recall("kestrel", hops=0)) == [seed]
    result = ws.recall("kestrel", hops=1)
    assert ids(result) == [seed, one]
    linked = by_id(result)[one]["breakdown"]
    assert linked["keyword"] is None
    assert linked["graph"]["hop"] == 1 and linked["graph"]["via"] == seed
    assert linked["graph"]["score"] == pytest.approx(1.0 * 0.6 * 0.5)


def test_default_hops_is_one(ws, chain):
    seed, one, _, _ = chain
    assert ids(ws.recall("kestrel")) == [seed, one]


def test_more_hops_reach_further_with_decayed_scores(ws, chain):
    seed, one, two, three = chain
    two_hops = by_id(ws.recall("kestrel", hops=2))
    assert set(two_hops) == {seed, one, two}
    assert two_hops[two]["breakdown"]["graph"]["hop"] == 2
    assert two_hops[two]["breakdown"]["graph"]["via"] == one
    assert two_hops[two]["breakdown"]["graph"]["score"] == pytest.approx(0.6**2 * 0.5 * 0.8)
    three_hops = by_id(ws.recall("kestrel", hops=3))
    assert set(three_hops) == {seed, one, two, three}
    graph = three_hops[three]["breakdown"]["graph"]
    assert graph["hop"] == 3
    assert graph["score"] == pytest.approx(0.6**3 * 0.5 * 0.8 * 1.0)
    assert three_hops[seed]["breakdown"]["graph"] is None  # its neighbour has no keyword score
    # support never flows back to an earlier level: one's score is the seed's gift alone
    assert three_hops[one]["breakdown"]["graph"]["score"] == pytest.approx(0.6 * 0.5)


def test_graph_score_scales_with_the_seed_score(ws, now_clock, add, filler):
    filler()
    strong = add("Osprey osprey nesting platform repaired")
    weak = add("An osprey was seen near the long quiet lake shore this spring morning")
    strong_friend = add("Ladder rental invoice")
    weak_friend = add("Boat hire receipt")
    ws.link(strong, strong_friend, "relates_to", weight=0.8)  # 0.48: under the cap
    ws.link(weak, weak_friend, "relates_to", weight=0.8)
    result = by_id(ws.recall("osprey", hops=1))
    s_strong = result[strong]["breakdown"]["keyword"]["score"]
    s_weak = result[weak]["breakdown"]["keyword"]["score"]
    assert s_strong > s_weak > 0
    assert result[weak]["breakdown"]["graph"] is None  # a seed no matching neighbour supports
    assert result[strong_friend]["breakdown"]["graph"]["score"] == pytest.approx(0.6 * 0.8)
    assert result[weak_friend]["breakdown"]["graph"]["score"] == pytest.approx(
        s_weak / s_strong * 0.6 * 0.8, rel=1e-4
    )


def test_edges_are_followed_in_both_directions(ws, now_clock, add):
    seed = add("Heron migration survey")
    upstream = add("Wetland funding application")
    ws.link(upstream, seed, "caused_by")  # directed: the seed is the edge's dst
    assert ids(ws.recall("heron", hops=1)) == [seed, upstream]


def test_fan_out_is_capped_at_the_strongest_edges(ws, now_clock, add):
    assert T.GRAPH_FANOUT_PER_NODE == 8
    hub = add("Hub entry about the albatross programme")
    leaves = {}
    for i in range(12):
        leaf = add(f"Leaf note number {i} with unrelated words")
        weight = round(0.2 + 0.05 * i, 2)  # 0.6 × 0.75 at most: under the cap
        ws.link(hub, leaf, "relates_to", weight=weight)
        leaves[leaf] = weight
    result = by_id(ws.recall("albatross", hops=1, topK=50))
    reached = {
        i
        for i, item in result.items()
        if item["breakdown"]["graph"] and item["breakdown"]["graph"]["hop"] == 1
    }
    strongest = sorted(leaves, key=leaves.get, reverse=True)[:8]
    assert reached == set(strongest)
    for leaf in reached:
        assert result[leaf]["breakdown"]["graph"]["score"] == pytest.approx(0.6 * leaves[leaf])


def test_node_cap_in_a_two_level_star(ws, now_clock, add):
    """hub -> 8 children -> 8 grandchildren each = 73 reachable nodes; at most 50 visited."""
    assert T.GRAPH_MAX_NODES == 50
    hub = add("Hub entry about the pelican census")
    children = []
    for i in range(8):
        child = add(f"Child note {i}")
        ws.link(hub, child, "part_of_project")
        children.append(child)
        for j in range(8):
            ws.link(child, add(f"Grandchild note {i}-{j}"), "part_of_project")
    hits = graph_arm(ws.conn, [Hit(hub, 5.0)], 2, Prefilter())
    assert len(hits) == T.GRAPH_MAX_NODES - 1  # every node but the seed itself
    assert len({h.id for h in hits}) == len(hits)
    assert {h.id for h in hits if h.detail["hop"] == 1} == set(children)
    per_parent: dict = {}
    for hit in hits:
        if hit.detail["via"] is not None:
            per_parent[hit.detail["via"]] = per_parent.get(hit.detail["via"], 0) + 1
    assert max(per_parent.values()) <= T.GRAPH_FANOUT_PER_NODE
    result = ws.recall("pelican", hops=2, topK=50)
    assert result["queryUsed"]["arms"]["graph"] == T.GRAPH_MAX_NODES - 1
    assert len(result["items"]) == T.GRAPH_MAX_NODES


def test_support_from_several_seeds_adds_up(ws, now_clock, add, filler):
    """An entry between two matching entries (a reply between question and follow-up) is
    supported by both; one next to a single match by one."""
    filler()
    question = add("Did the grebe survey start on time", kind="episodic")
    follow_up = add("And the grebe survey needs boats too", kind="episodic")
    between = add("Yes it started at dawn", kind="episodic")
    aside = add("Coffee was late", kind="episodic")
    ws.link(between, question, "follows", weight=0.5)
    ws.link(follow_up, between, "follows", weight=0.5)
    ws.link(aside, follow_up, "follows", weight=0.5)
    hits = {
        h.id: h
        for h in graph_arm(ws.conn, [Hit(question, 2.0), Hit(follow_up, 1.0)], 1, Prefilter())
    }
    assert hits[between].score == pytest.approx(0.6 * 0.5 * (1.0 + 0.5))
    assert hits[aside].score == pytest.approx(0.6 * 0.5 * 0.5)
    assert hits[between].detail == {"hop": 1, "via": question}  # the larger gift
    order = ids(ws.recall("grebe survey"))
    assert set(order[:3]) == {question, between, follow_up} and order[3] == aside


def test_graph_arm_cost_is_bounded_by_the_node_cap_on_a_dense_graph(ws, now_clock, add):
    """A clique: every node reaches every other; still at most 50 nodes, and no node's support
    above the best seed's score however many paths reach it."""
    nodes = [add(f"Clique member {i} shares the word tern") for i in range(12)]
    for i, a in enumerate(nodes):
        for b in nodes[i + 1 :]:
            ws.link(a, b, "relates_to", weight=0.9)
    hits = graph_arm(ws.conn, [Hit(n, 1.0) for n in nodes[:10]], 3, Prefilter())
    assert len({h.id for h in hits}) == len(hits) <= T.GRAPH_MAX_NODES
    assert all(h.score <= T.GRAPH_SUPPORT_MAX for h in hits)
    assert max(h.score for h in hits) == pytest.approx(T.GRAPH_SUPPORT_MAX)


def test_a_hub_linked_to_every_match_never_outranks_the_best_match(ws, now_clock, add):
    matches = [
        add(f"Plover sighting number {i} near the old pier, noted by the morning walk")
        for i in range(8)
    ]
    hub = add("Field notebook index for the season")
    for entry in matches:
        ws.link(hub, entry, "relates_to", weight=1.0)
    result = ws.recall("plover", hops=1)
    keyword_best = max(
        i["breakdown"]["keyword"]["rrf"] for i in result["items"] if i["breakdown"]["keyword"]
    )
    hub_item = by_id(result)[hub]
    assert hub_item["breakdown"]["fused"] < keyword_best  # however many matches link to it
    assert ids(result)[0] != hub, "a graph-only hub outranked the best keyword match"


def test_deprecated_neighbours_are_neither_returned_nor_traversed(ws, now_clock, add):
    seed = add("Puffin colony headcount")
    dead = add("Old boat schedule", status="deprecated")
    beyond = add("Harbour master phone number")
    alive = add("Island ferry timetable")
    ws.link(seed, dead, "relates_to", weight=1.0)
    ws.link(dead, beyond, "relates_to", weight=1.0)
    ws.link(seed, alive, "relates_to", weight=0.2)
    result = ws.recall("puffin", hops=3)
    assert ids(result) == [seed, alive]


def test_graph_respects_the_kind_and_tag_prefilters(ws, now_clock, add):
    seed = add("Gannet dive study", kind="semantic", tags=["birds"])
    other_kind = add("Field trip on the cliffs", kind="episodic", tags=["birds"])
    untagged = add("Camera lens settings", kind="semantic")
    ws.link(seed, other_kind, "relates_to")
    ws.link(seed, untagged, "relates_to")
    assert ids(ws.recall("gannet", kind="semantic", tag="birds")) == [seed]
    assert set(ids(ws.recall("gannet"))) == {seed, other_kind, untagged}


def test_graph_arm_without_seeds_or_hops_adds_nothing(ws, now_clock, add):
    a, b = add("Cormorant wing drying"), add("Sunny rock ledge")
    ws.link(a, b, "relates_to")
    assert graph_arm(ws.conn, [], 2, Prefilter()) == []
    assert graph_arm(ws.conn, [Hit(a, 4.0)], 0, Prefilter()) == []
    hits = graph_arm(ws.conn, [Hit(a, 4.0)], 1, Prefilter())
    assert [(h.id, h.detail) for h in hits] == [(b, {"hop": 1, "via": a})]
    assert hits[0].score == pytest.approx(min(0.6 * 1.0, T.GRAPH_SUPPORT_MAX))
    assert ws.recall("zzzunknownword", hops=3)["items"] == []
    result = ws.recall("cormorant", hops=0)
    assert ids(result) == [a] and result["items"][0]["breakdown"]["graph"] is None
