"""Read methods: getEntry, listRecent, connections, graphView, getTags, getCount, getStats,
getBrief — each through `ws.call` and through the Python wrappers (the `api` fixture)."""

import pytest

from minisphere.engine import constants as C
from minisphere.errors import NotFound

# ---- getEntry --------------------------------------------------------------------------------


def test_get_entry_shape_and_counts(api, make_entry):
    entry_id = api.capture(
        "Incident review notes", tags=["zeta", "Alpha"], kind="episodic", volatility="durable"
    )["id"]
    a, b = make_entry(), make_entry()
    api.link(entry_id, a, "caused_by")
    api.link(b, entry_id, "supersedes")
    api.link(a, entry_id, "relates_to")
    for i in range(7):
        api.append(entry_id, f"addendum {i}")
    entry = api.get_entry(entry_id)
    assert set(entry) == {
        "id",
        "content",
        "source",
        "createdAt",
        "updatedAt",
        "recallCount",
        "importance",
        "claimTag",
        "evidenceRef",
        "status",
        "kind",
        "volatility",
        "tags",
        "revisionCount",
        "edgeCount",
        "revisions",
        "stale",
        "staleSince",
        "staleDueAt",
        "supersession",
    }
    assert entry["supersession"] == {
        "supersededBy": b,
        "chain": [entry_id, b],
        "supersedes": [],
    }
    assert entry["tags"] == ["alpha", "zeta"]  # sorted
    assert entry["revisionCount"] == 7
    assert entry["edgeCount"] == 3
    # the newest five revisions, newest first
    assert len(entry["revisions"]) == 5
    assert entry["revisions"][0]["content"].endswith("addendum 5")
    assert entry["revisions"][-1]["content"].endswith("addendum 1")
    assert all(r["reason"] == "append" for r in entry["revisions"])


def test_get_entry_missing_is_not_found(api):
    with pytest.raises(NotFound, match="123e4567-e89b-42d3-a456-426614174000"):
        api.get_entry("123e4567-e89b-42d3-a456-426614174000")


def test_get_entry_is_a_pure_read(api, ws, make_entry):
    from tests.engine.helpers import snapshot

    entry_id = make_entry()
    before = snapshot(ws)
    api.get_entry(entry_id)
    api.list_recent()
    api.connections(entry_id)
    api.graph_view([entry_id], hops=3)
    api.get_tags(), api.get_count(), api.get_stats(), api.get_brief()
    assert snapshot(ws) == before


# ---- listRecent ------------------------------------------------------------------------------


def test_list_recent_default_n_and_newest_first(api, clock):
    ids = []
    for i in range(C.LIST_RECENT_DEFAULT_N + 5):
        ids.append(api.capture(f"note number {i}")["id"])
        clock.advance(seconds=1)
    items = api.list_recent()["items"]
    assert len(items) == C.LIST_RECENT_DEFAULT_N
    assert [e["id"] for e in items] == ids[::-1][: C.LIST_RECENT_DEFAULT_N]
    assert [e["createdAt"] for e in items] == sorted((e["createdAt"] for e in items), reverse=True)


def test_list_recent_n_and_same_millisecond_order(api):
    ids = [api.capture(f"same instant {i}")["id"] for i in range(5)]
    assert [e["id"] for e in api.list_recent(n=3)["items"]] == ids[::-1][:3]
    assert [e["id"] for e in api.list_recent(n=C.LIST_RECENT_MAX_N)["items"]] == ids[::-1]
    assert [e["id"] for e in api.list_recent(n=1)["items"]] == [ids[-1]]


def test_list_recent_orders_by_creation_not_update(api, clock):
    old = api.capture("older entry")["id"]
    clock.advance(seconds=1)
    new = api.capture("newer entry")["id"]
    clock.advance(seconds=1)
    api.update(old, "older entry, edited later")
    assert [e["id"] for e in api.list_recent()["items"]] == [new, old]


def test_list_recent_by_tag(api, clock):
    a = api.capture("tagged one", tags=["Project Apollo"])["id"]
    clock.advance(ms=1)
    api.capture("untagged")
    clock.advance(ms=1)
    c = api.capture("tagged two", tags=["project-apollo", "other"])["id"]
    items = api.list_recent(tag="PROJECT   apollo")["items"]  # the filter is normalized too
    assert [e["id"] for e in items] == [c, a]
    assert items[0]["tags"] == ["other", "project-apollo"]
    assert api.list_recent(tag="nobody-uses-this")["items"] == []
    assert [e["id"] for e in api.list_recent(tag="project-apollo", n=1)["items"]] == [c]


def test_list_recent_empty_workspace(api):
    assert api.list_recent() == {"items": []}


def test_list_recent_items_carry_full_entries(api):
    entry_id = api.capture("full entry in list", tags=["t"], source="src", importance=0.3)["id"]
    item = api.list_recent()["items"][0]
    entry = api.get_entry(entry_id)
    for key in (
        "id",
        "content",
        "source",
        "createdAt",
        "updatedAt",
        "importance",
        "tags",
        "status",
        "kind",
        "volatility",
        "claimTag",
        "evidenceRef",
        "recallCount",
    ):
        assert item[key] == entry[key]


# ---- connections -----------------------------------------------------------------------------


def test_connections_both_directions_with_neighbours(api, make_entry):
    hub = make_entry("the hub entry")
    out_peer = api.capture("outgoing neighbour", tags=["peer"])["id"]
    in_peer = make_entry("incoming neighbour")
    sym_peer = make_entry("symmetric neighbour")
    stranger = make_entry("not connected to the hub")
    api.link(hub, out_peer, "supersedes", weight=0.9)
    api.link(in_peer, hub, "caused_by", weight=0.5)
    api.link(sym_peer, hub, "relates_to", weight=0.7)
    api.link(out_peer, stranger, "relates_to")
    result = api.connections(hub)
    assert result["id"] == hub
    items = result["items"]
    assert [i["entry"]["id"] for i in items] == [out_peer, sym_peer, in_peer]  # weight desc
    assert [i["direction"] for i in items] == ["out", "both", "in"]
    assert [i["edge"]["type"] for i in items] == ["supersedes", "relates_to", "caused_by"]
    assert items[0]["entry"]["content"] == "outgoing neighbour"
    assert items[0]["entry"]["tags"] == ["peer"]
    # from the other side the same edges read the other way round
    assert [i["direction"] for i in api.connections(out_peer)["items"]] == ["both", "in"]
    assert [i["direction"] for i in api.connections(in_peer)["items"]] == ["out"]


def test_connections_of_isolated_entry(api, make_entry):
    entry_id = make_entry()
    assert api.connections(entry_id) == {
        "id": entry_id,
        "items": [],
        "supersession": {"supersededBy": None, "chain": [entry_id], "supersedes": []},
    }


def test_connections_missing_entry(api):
    with pytest.raises(NotFound):
        api.connections("123e4567-e89b-42d3-a456-426614174000")


# ---- graphView -------------------------------------------------------------------------------


@pytest.fixture
def chain(api, make_entry):
    """a - b - c - d - e (mixed edge types and directions)."""
    ids = [make_entry(f"chain node {ch}") for ch in "abcde"]
    api.link(ids[0], ids[1], "relates_to", weight=0.9)
    api.link(ids[2], ids[1], "caused_by", weight=0.8)
    api.link(ids[2], ids[3], "supersedes", weight=0.7)
    api.link(ids[4], ids[3], "part_of_project", weight=0.6)
    return ids


@pytest.mark.parametrize("hops", [0, 1, 2, 3])
def test_graph_view_hops(api, chain, hops):
    view = api.graph_view([chain[0]], hops=hops)
    assert [(n["id"], n["hop"]) for n in view["nodes"]] == [(chain[i], i) for i in range(hops + 1)]
    assert len(view["edges"]) == hops
    node_ids = {n["id"] for n in view["nodes"]}
    assert all(e["src"] in node_ids and e["dst"] in node_ids for e in view["edges"])
    assert view["truncated"] is False and view["missingSeedIds"] == []


def test_graph_view_default_hops_is_one(api, chain):
    view = api.graph_view([chain[2]])
    assert {n["id"]: n["hop"] for n in view["nodes"]} == {chain[2]: 0, chain[1]: 1, chain[3]: 1}
    assert {(e["src"], e["dst"], e["type"]) for e in view["edges"]} == {
        (chain[2], chain[1], "caused_by"),
        (chain[2], chain[3], "supersedes"),
    }


def test_graph_view_nodes_are_full_entries(api, chain):
    node = api.graph_view([chain[0]], hops=0)["nodes"][0]
    entry = api.get_entry(chain[0])
    assert node["content"] == entry["content"] and node["tags"] == entry["tags"]


def test_graph_view_missing_and_duplicate_seeds(api, chain):
    missing = "123e4567-e89b-42d3-a456-426614174000"
    view = api.graph_view([missing, chain[4], chain[4]], hops=1)
    assert view["missingSeedIds"] == [missing]
    assert {n["id"]: n["hop"] for n in view["nodes"]} == {chain[4]: 0, chain[3]: 1}
    only_missing = api.graph_view([missing])
    assert only_missing == {
        "nodes": [],
        "edges": [],
        "truncated": False,
        "missingSeedIds": [missing],
    }


def test_graph_view_several_seeds(api, chain):
    view = api.graph_view([chain[0], chain[4]], hops=1)
    assert {n["id"]: n["hop"] for n in view["nodes"]} == {
        chain[0]: 0,
        chain[4]: 0,
        chain[1]: 1,
        chain[3]: 1,
    }


def test_graph_view_size_is_bounded(api, ws):
    # seed -> 10 hubs -> 30 leaves each: 311 reachable nodes within two hops
    def capture(text):
        return ("capture", {"content": text})

    seed = ws.capture("graph seed")["id"]
    hubs = [r["id"] for ok, r in ws.run_batch([capture(f"hub {i}") for i in range(10)])]
    links = [("link", {"src": seed, "dst": h, "type": "relates_to"}) for h in hubs]
    for h_i, hub in enumerate(hubs):
        leaves = [
            r["id"] for ok, r in ws.run_batch([capture(f"leaf {h_i}-{j}") for j in range(30)])
        ]
        links += [("link", {"src": hub, "dst": leaf, "type": "part_of_project"}) for leaf in leaves]
    assert all(ok for ok, _ in ws.run_batch(links))
    view = api.graph_view([seed], hops=2)
    assert view["truncated"] is True
    assert len(view["nodes"]) == C.GRAPH_VIEW_MAX_NODES
    node_ids = {n["id"] for n in view["nodes"]}
    assert set(hubs) <= node_ids
    assert all(e["src"] in node_ids and e["dst"] in node_ids for e in view["edges"])
    assert api.graph_view([seed], hops=1)["truncated"] is False


def test_graph_view_fanout_keeps_strongest_edges(api, ws):
    seed = ws.capture("fan-out seed")["id"]
    spokes = [
        r["id"]
        for ok, r in ws.run_batch(
            [
                ("capture", {"content": f"spoke {i}"})
                for i in range(C.GRAPH_VIEW_FANOUT_PER_NODE + 10)
            ]
        )
    ]
    ws.run_batch(
        [
            ("link", {"src": seed, "dst": s, "type": "supersedes", "weight": (i + 1) / 100})
            for i, s in enumerate(spokes)
        ]
    )
    view = api.graph_view([seed], hops=1)
    kept = {n["id"] for n in view["nodes"]} - {seed}
    assert kept == set(spokes[-C.GRAPH_VIEW_FANOUT_PER_NODE :])


# ---- getTags / getCount / getStats -----------------------------------------------------------


def test_get_tags_vocabulary_with_counts(api):
    assert api.get_tags() == {"tags": [], "truncated": False}
    api.capture("one", tags=["b", "a"])
    api.capture("two", tags=["B"])
    api.capture("three", tags=["c", "b"])
    assert api.get_tags() == {
        "tags": [{"tag": "b", "count": 3}, {"tag": "a", "count": 1}, {"tag": "c", "count": 1}],
        "truncated": False,
    }


def test_get_tags_answers_at_most_limit_tags_the_most_used_first(api):
    """A write token could grow the vocabulary without bound, and the whole of it was built
    into one answer: the answer is bounded, and says when tags were left out."""
    for n in range(C.GET_TAGS_MAX_LIMIT + 5):
        api.capture(f"entry {n}", tags=[f"t{n:05d}", *(["common"] if n % 2 else [])])
    answer = api.get_tags()
    assert len(answer["tags"]) == C.GET_TAGS_DEFAULT_LIMIT and answer["truncated"]
    assert answer["tags"][0] == {"tag": "common", "count": (C.GET_TAGS_MAX_LIMIT + 5) // 2}
    assert [t["tag"] for t in answer["tags"][1:4]] == ["t00000", "t00001", "t00002"]
    most = api.get_tags(limit=C.GET_TAGS_MAX_LIMIT)
    assert len(most["tags"]) == C.GET_TAGS_MAX_LIMIT and most["truncated"]
    assert api.get_tags(limit=3) == {
        "tags": [
            {"tag": "common", "count": (C.GET_TAGS_MAX_LIMIT + 5) // 2},
            {"tag": "t00000", "count": 1},
            {"tag": "t00001", "count": 1},
        ],
        "truncated": True,
    }


def test_get_count(api, make_entry):
    assert api.get_count() == {"count": 0}
    ids = [make_entry() for _ in range(3)]
    assert api.get_count() == {"count": 3}
    api.forget(ids[0])
    assert api.get_count() == {"count": 2}


def test_get_stats(api, make_entry):
    empty = api.get_stats()
    assert empty["count"] == 0 and empty["avgImportance"] == 0 and empty["unclassified"] == 0
    assert empty["topTopics"] == [] and empty["edgeCount"] == 0
    a = api.capture(
        "stats one", tags=["db", "ops"], importance=0.2, kind="episodic", volatility="state"
    )["id"]
    b = api.capture(
        "stats two",
        tags=["db", "rolled-up"],
        importance=0.6,
        kind="semantic",
        volatility="durable",
        status="draft",
    )["id"]
    api.capture("stats three", tags=["db"], importance=1.0)
    api.link(a, b, "relates_to")
    stats = api.get_stats()
    assert stats["count"] == 3
    assert stats["avgImportance"] == pytest.approx(0.6)
    assert stats["unclassified"] == 1
    assert stats["topTopics"] == [{"tag": "db", "count": 3}, {"tag": "ops", "count": 1}]
    assert stats["byStatus"] == {"canonical": 2, "draft": 1}
    assert stats["byKind"] == {"episodic": 1, "semantic": 2}
    assert stats["byVolatility"] == {"state": 1, "durable": 2}
    assert stats["edgeCount"] == 1


def test_top_topics_limited(api):
    for i in range(C.TOP_TOPICS_N + 3):
        api.capture(f"topic carrier {i}", tags=[f"topic-{i:02d}"])
    assert len(api.get_stats()["topTopics"]) == C.TOP_TOPICS_N


# ---- getBrief --------------------------------------------------------------------------------


def test_get_brief_recent_topics_and_resurface(api, clock):
    t0 = clock.now_ms()
    a = api.capture("Alpha: the important old decision", importance=0.9, tags=["arch"])["id"]
    b = api.capture("Bravo: a minor old note", importance=0.2, tags=["arch"])["id"]
    api.capture("Charlie: deprecated and important", importance=1.0, status="deprecated")
    d = api.capture("Delta: middling", importance=0.5, tags=["ops"])["id"]
    api.append(d, "with an appendix")

    brief = api.get_brief()
    assert brief["generatedAt"] == t0
    assert brief["count"] == 4
    recent = brief["recentActivity"]
    assert recent["windowMs"] == C.BRIEF_RECENT_WINDOW_MS
    assert (recent["captured"], recent["revised"]) == (4, 1)
    assert [e["id"] for e in recent["entries"]] == [d, b, a]  # deprecated left out
    assert brief["resurface"] == []  # nothing is old yet
    assert brief["topTopics"] == [{"tag": "arch", "count": 2}, {"tag": "ops", "count": 1}]

    clock.advance(days=15)
    e = api.capture("Echo: fresh")["id"]
    brief = api.get_brief()
    assert brief["generatedAt"] == clock.now_ms()
    assert (brief["recentActivity"]["captured"], brief["recentActivity"]["revised"]) == (1, 0)
    assert [x["id"] for x in brief["recentActivity"]["entries"]] == [e, d, b, a]
    assert [x["id"] for x in brief["resurface"]] == [a, d, b]  # importance first, no deprecated

    api.update(a, "Alpha: the important old decision")  # confirmation refreshes updated_at
    assert [x["id"] for x in api.get_brief()["resurface"]] == [d, b]


def test_get_brief_resurface_needs_two_weeks(api, clock):
    entry_id = api.capture("waiting to resurface", importance=0.5)["id"]
    clock.advance(ms=C.BRIEF_RESURFACE_MIN_AGE_MS - 1)
    assert api.get_brief()["resurface"] == []
    clock.advance(ms=1)
    assert [x["id"] for x in api.get_brief()["resurface"]] == [entry_id]


def test_get_brief_preview_is_cut(api):
    long_text = "x" * (C.BRIEF_PREVIEW_CHARS + 40)
    api.capture(long_text)
    preview = api.get_brief()["recentActivity"]["entries"][0]
    assert preview["preview"] == "x" * C.BRIEF_PREVIEW_CHARS + "…"
    assert set(preview) == {
        "id",
        "preview",
        "createdAt",
        "updatedAt",
        "kind",
        "tags",
        "importance",
        "recallCount",
    }


def test_get_brief_empty_workspace(api, clock):
    brief = api.get_brief()
    assert brief["count"] == 0 and brief["resurface"] == [] and brief["topTopics"] == []
    assert brief["recentActivity"]["entries"] == []
    assert brief["recentActivity"]["captured"] == 0


# ---- the injectable clock --------------------------------------------------------------------


def test_timestamps_come_from_the_clock(api, clock):
    clock.set(1_700_000_000_123)
    entry_id = api.capture("clocked entry")["id"]
    entry = api.get_entry(entry_id)
    assert entry["createdAt"] == entry["updatedAt"] == 1_700_000_000_123
    clock.advance(days=2, ms=5)
    entry = api.update(entry_id, "clocked entry, changed")
    assert entry["createdAt"] == 1_700_000_000_123
    assert entry["updatedAt"] == 1_700_000_000_123 + 2 * 86_400_000 + 5
    assert entry["revisions"][0]["at"] == entry["updatedAt"]
    clock.advance(seconds=1)
    other = api.capture("second clocked entry")["id"]
    edge = api.link(entry_id, other, "relates_to")["edge"]
    assert edge["createdAt"] == edge["updatedAt"] == clock.now_ms()


def test_schema_migration_time_comes_from_the_clock(ws, clock):
    from minisphere.engine.db import available_migrations

    assert ws.conn.execute("SELECT applied_at FROM schema_migrations").fetchall() == [
        (clock.now_ms(),)
    ] * len(available_migrations())


def test_list_style_reads_bound_each_entrys_content(ws):
    """listRecent, connections and graphView cut long content (saying so and how long it is);
    getEntry still has all of it. 200 entries of 64 KiB would otherwise be a 13 MB answer."""
    from minisphere.engine.constants import LIST_CONTENT_MAX_CHARS, MAX_CONTENT_BYTES

    long_text = ("word " * (MAX_CONTENT_BYTES // 5))[: MAX_CONTENT_BYTES - 1]
    big = ws.capture(long_text)["id"]
    small = ws.capture("a short neighbour")["id"]
    ws.link(big, small, "relates_to")
    [listed_small, listed_big] = ws.list_recent(n=2)["items"]
    assert listed_small["content"] == "a short neighbour" and "truncated" not in listed_small
    assert listed_big["truncated"] is True and listed_big["contentChars"] == len(long_text)
    assert listed_big["content"] == long_text[:LIST_CONTENT_MAX_CHARS]
    assert ws.connections(small)["items"][0]["entry"]["truncated"] is True
    nodes = {n["id"]: n for n in ws.graph_view([small], hops=1)["nodes"]}
    assert len(nodes[big]["content"]) == LIST_CONTENT_MAX_CHARS
    assert ws.get_entry(big)["content"] == long_text


def test_graph_view_over_dense_edges_with_large_metadata_is_not_an_unbounded_answer(ws):
    """Every node linked to 32 others, each edge with 8 KiB of metadata: hops=3 reached 193
    nodes and 4,551 edges in a 37 MB answer. Each edge now shows its metadata only up to
    GRAPH_VIEW_EDGE_METADATA_MAX_BYTES (saying it left the rest out, and how big it is), so
    the answer is bounded by the node and fan-out caps; every edge among the nodes is still
    there, and connections still has the whole metadata."""
    import json

    from minisphere.engine.constants import GRAPH_VIEW_EDGE_METADATA_MAX_BYTES as METADATA_MAX

    nodes = [ws.capture(f"node {i} " + "x" * 900)["id"] for i in range(C.GRAPH_VIEW_MAX_NODES)]
    large = {"note": "m" * (C.MAX_METADATA_BYTES - 20)}
    small = {"why": "same incident"}
    calls = [
        (
            "link",
            {
                "src": nodes[i],
                "dst": nodes[(i + k) % len(nodes)],
                "type": "caused_by",
                "metadata": small if k == 1 else large,
            },
            None,
        )
        for i in range(len(nodes))
        for k in range(1, 33)
    ]
    for start in range(0, len(calls), 500):
        assert all(outcome.ok for outcome in ws.run_batch(calls[start : start + 500]))
    answer = ws.graph_view([nodes[0]], hops=3)
    edges = answer["edges"]
    assert len(edges) > 3000
    size = len(json.dumps(answer).encode("utf-8"))
    per_edge_max = METADATA_MAX + 400  # the edge's own fields, with room to spare
    per_node_max = 4 * C.LIST_CONTENT_MAX_CHARS + 400
    assert size <= len(edges) * per_edge_max + len(answer["nodes"]) * per_node_max
    assert size < 2_000_000, size
    omitted = [e for e in edges if e.get("metadataOmitted")]
    shown = [e for e in edges if not e.get("metadataOmitted")]
    assert omitted and all(
        e["metadata"] is None and e["metadataBytes"] > METADATA_MAX for e in omitted
    )
    assert shown and all(e["metadata"] == small and "metadataBytes" not in e for e in shown)
    whole = {
        (c["edge"]["src"], c["edge"]["dst"]): c["edge"]
        for c in ws.connections(omitted[0]["src"])["items"]
    }
    edge = whole[(omitted[0]["src"], omitted[0]["dst"])]
    assert edge["metadata"] == large
    assert METADATA_MAX < omitted[0]["metadataBytes"] <= C.MAX_METADATA_BYTES
