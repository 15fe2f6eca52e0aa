"""Write methods: capture, append, update, setStatus, forget, link, unlink.

Every test runs twice through the `api` fixture: once via `ws.call(name, camelCaseBody)` and
once via the snake_case Python wrappers.
"""

import pytest

from minisphere.engine.arguments import EDGE_TYPES
from minisphere.engine.normalize import content_hash
from minisphere.errors import InvalidArgument, KindGateViolation, NotFound
from tests.engine.helpers import fts_ids, fts_rowcount, snapshot


def db_row(ws, entry_id, columns="*"):
    return ws.conn.execute(f"SELECT {columns} FROM entries WHERE id = ?", (entry_id,)).fetchone()


# ---- capture ---------------------------------------------------------------------------------


def test_capture_with_every_option(api, ws, clock):
    result = api.capture(
        "Deploy keys live in the vault under ops/deploy",
        tags=["Ops", "Secrets"],
        source="agent:planner",
        volatility="state",
        kind="episodic",
        status="draft",
        importance=0.75,
        claim_tag="VERIFIED",
        evidence_ref="https://example.test/runbook#keys",
    )
    assert result["outcome"] == "stored"
    assert set(result) == {"outcome", "id"}
    entry = api.get_entry(result["id"])
    assert entry["content"] == "Deploy keys live in the vault under ops/deploy"
    assert entry["tags"] == ["ops", "secrets"]
    assert entry["source"] == "agent:planner"
    assert entry["volatility"] == "state"
    assert entry["kind"] == "episodic"
    assert entry["status"] == "draft"
    assert entry["importance"] == 0.75
    assert entry["claimTag"] == "VERIFIED"
    assert entry["evidenceRef"] == "https://example.test/runbook#keys"
    assert entry["createdAt"] == entry["updatedAt"] == clock.now_ms()
    assert entry["recallCount"] == 0
    assert entry["revisionCount"] == 0 and entry["edgeCount"] == 0
    unclassified, digest = db_row(ws, result["id"], "unclassified, content_hash")
    assert unclassified == 0
    assert digest == content_hash("Deploy keys live in the vault under ops/deploy")


def test_capture_defaults(api, ws):
    entry_id = api.capture("The team calendar is shared with contractors")["id"]
    entry = api.get_entry(entry_id)
    assert entry["status"] == "canonical"
    assert entry["kind"] == "semantic"
    assert entry["importance"] == 0.0
    assert entry["claimTag"] is None and entry["evidenceRef"] is None and entry["source"] is None
    assert entry["tags"] == []
    assert entry["volatility"] == "durable"  # inferred: nothing time-bound in the text
    assert db_row(ws, entry_id, "unclassified")[0] == 1


@pytest.mark.parametrize("claim", ["VERIFIED", "INFERRED", "UNKNOWN"])
def test_capture_each_claim_tag(api, claim):
    entry_id = api.capture(f"claim tagged {claim}", claim_tag=claim)["id"]
    assert api.get_entry(entry_id)["claimTag"] == claim


@pytest.mark.parametrize("status", ["canonical", "draft", "deprecated"])
def test_capture_each_status(api, status):
    entry_id = api.capture(f"an entry born {status}", status=status)["id"]
    assert api.get_entry(entry_id)["status"] == status


@pytest.mark.parametrize("importance", [0, 0.0, 1, 1.0, 0.5])
def test_capture_importance_bounds_accepted(api, importance):
    entry_id = api.capture(f"importance {importance!r}", importance=importance)["id"]
    assert api.get_entry(entry_id)["importance"] == float(importance)


@pytest.mark.parametrize(
    "given, inferred",
    [
        ({}, "durable"),
        ({"kind": "semantic"}, "durable"),
    ],
)
def test_volatility_inferred_when_not_given(api, given, inferred):
    entry_id = api.capture("PostgreSQL is the system of record", **given)["id"]
    assert api.get_entry(entry_id)["volatility"] == inferred


def test_volatility_inferred_classes(api):
    volatile = api.capture("The nightly build is currently failing", kind="semantic")["id"]
    state = api.capture("As of this sprint the API is at v2.3", kind="semantic")["id"]
    durable = api.capture("Invoices are archived for ten years", kind="semantic")["id"]
    given = api.capture("The deploy queue is currently blocked", volatility="durable")["id"]
    assert api.get_entry(volatile)["volatility"] == "volatile"
    assert api.get_entry(state)["volatility"] == "state"
    assert api.get_entry(durable)["volatility"] == "durable"
    assert api.get_entry(given)["volatility"] == "durable"  # caller wins over the heuristic


def test_unclassified_counting(api):
    api.capture("both given", kind="semantic", volatility="durable")
    api.capture("only kind given", kind="episodic")
    api.capture("only volatility given", volatility="state")
    api.capture("nothing given")
    stats = api.get_stats()
    assert stats["count"] == 4
    assert stats["unclassified"] == 3


def test_capture_exact_duplicate_is_blocked(api, ws):
    first = api.capture("Rotate the API token every ninety days", tags=["security"])
    before = snapshot(ws)
    again = api.capture("Rotate the API token every ninety days", tags=["other"], importance=1.0)
    assert again == {"outcome": "blocked", "matchId": first["id"]}
    assert snapshot(ws) == before  # blocked writes nothing, not even the new tags
    assert api.get_count()["count"] == 1


@pytest.mark.parametrize(
    "variant",
    [
        "rotate the api token every ninety days",
        "ROTATE THE API TOKEN EVERY NINETY DAYS",
        "  Rotate   the API\ttoken\nevery ninety days  ",
        "Ｒｏｔａｔｅ the ＡＰＩ token every ninety days",  # noqa: RUF001 - full-width forms (NFKC)
        "Rotate\u3000the\u00a0API token every ninety days",  # ideographic / no-break spaces
    ],
)
def test_capture_normalized_duplicate_is_blocked(api, variant):
    first = api.capture("Rotate the API token every ninety days")
    assert api.capture(variant) == {"outcome": "blocked", "matchId": first["id"]}


@pytest.mark.parametrize(
    "different",
    [
        "Rotate the API token every ninety days.",  # punctuation differs
        "Rotate the API token every 90 days",  # digits differ
        "Rotate the token API every ninety days",  # word order differs
        "Rotate the API token every ninety-days",
    ],
)
def test_capture_different_text_is_stored(api, different):
    api.capture("Rotate the API token every ninety days")
    assert api.capture(different)["outcome"] == "stored"


def test_dedup_follows_current_content(api):
    entry_id = api.capture("first wording of the fact")["id"]
    api.update(entry_id, "second wording of the fact")
    assert api.capture("second wording of the fact") == {"outcome": "blocked", "matchId": entry_id}
    assert api.capture("first wording of the fact")["outcome"] == "stored"


def test_dedup_gone_after_forget(api):
    entry_id = api.capture("a fact that will be forgotten")["id"]
    api.forget(entry_id)
    again = api.capture("a fact that will be forgotten")
    assert again["outcome"] == "stored" and again["id"] != entry_id


def test_capture_content_at_exact_byte_limit(api):
    from minisphere.engine.constants import MAX_CONTENT_BYTES

    text = "é" * (MAX_CONTENT_BYTES // 2)  # 2 bytes each: exactly the limit
    assert len(text.encode()) == MAX_CONTENT_BYTES
    entry_id = api.capture(text)["id"]
    assert api.get_entry(entry_id)["content"] == text


def test_capture_tags_normalized_and_deduplicated(api):
    entry_id = api.capture(
        "tag normalization",
        tags=["Project X", "project   x", "  ＡＢＣ ", "abc", "rolled-up"],  # noqa: RUF001 - full-width
    )["id"]
    assert api.get_entry(entry_id)["tags"] == ["abc", "project-x", "rolled-up"]


def test_capture_32_tags_of_64_chars_allowed(api):
    tags = [f"{i:02d}" + "t" * 62 for i in range(32)]
    entry_id = api.capture("many long tags", tags=tags)["id"]
    assert api.get_entry(entry_id)["tags"] == sorted(tags)


def test_capture_indexes_content_in_fts(api, ws):
    entry_id = api.capture("Kubernetes quartermaster rotates secrets")["id"]
    assert fts_ids(ws, "quartermaster") == [entry_id]


# ---- append ----------------------------------------------------------------------------------


def test_append_keeps_revision_and_returns_new_state(api, ws, clock):
    entry_id = api.capture("Release train leaves on Tuesdays  ", tags=["release"])["id"]
    created = clock.now_ms()
    clock.advance(seconds=30)
    state = api.append(entry_id, "  Hotfixes may board on Thursdays ", tags=["Hotfix", "release"])
    assert state["id"] == entry_id
    assert state["content"] == "Release train leaves on Tuesdays\nHotfixes may board on Thursdays"
    assert state["tags"] == ["hotfix", "release"]
    assert state["revisionCount"] == 1
    assert state["revisions"] == [
        {"content": "Release train leaves on Tuesdays  ", "at": clock.now_ms(), "reason": "append"}
    ]
    assert state["createdAt"] == created
    assert state["updatedAt"] == clock.now_ms()
    rows = ws.conn.execute(
        "SELECT content, at, reason FROM revisions WHERE entry_id = ?", (entry_id,)
    ).fetchall()
    assert rows == [("Release train leaves on Tuesdays  ", clock.now_ms(), "append")]
    assert fts_ids(ws, "thursdays") == [entry_id]
    assert fts_ids(ws, "tuesdays") == [entry_id]
    assert db_row(ws, entry_id, "content_hash")[0] == content_hash(state["content"])
    assert api.get_entry(entry_id) == state


def test_append_options_change_only_what_is_given(api):
    entry_id = api.capture(
        "A base fact", source="s1", importance=0.2, claim_tag="INFERRED", evidence_ref="ref-1"
    )["id"]
    state = api.append(entry_id, "more detail")
    assert (state["source"], state["importance"], state["claimTag"], state["evidenceRef"]) == (
        "s1",
        0.2,
        "INFERRED",
        "ref-1",
    )
    state = api.append(
        entry_id,
        "even more",
        importance=0.9,
        claim_tag="VERIFIED",
        evidence_ref="ref-2",
        source="s2",
    )
    assert (state["source"], state["importance"], state["claimTag"], state["evidenceRef"]) == (
        "s2",
        0.9,
        "VERIFIED",
        "ref-2",
    )
    assert state["revisionCount"] == 2
    assert [r["content"] for r in state["revisions"]] == ["A base fact\nmore detail", "A base fact"]


def test_append_importance_zero_is_applied(api):
    entry_id = api.capture("important at first", importance=0.8)["id"]
    assert api.append(entry_id, "not any more", importance=0)["importance"] == 0.0


# ---- update ----------------------------------------------------------------------------------


def test_update_keeps_prior_content_as_revision(api, ws, clock):
    entry_id = api.capture("The staging database is called blueberry")["id"]
    clock.advance(seconds=5)
    state = api.update(entry_id, "The staging database is called raspberry")
    assert state["content"] == "The staging database is called raspberry"
    assert state["revisionCount"] == 1
    assert state["revisions"][0] == {
        "content": "The staging database is called blueberry",
        "at": clock.now_ms(),
        "reason": "update",
    }
    assert state["updatedAt"] == clock.now_ms()
    assert fts_ids(ws, "raspberry") == [entry_id]
    assert fts_ids(ws, "blueberry") == []
    assert fts_rowcount(ws, "blueberry") == 0


def test_update_with_identical_content_moves_only_updated_at(api, ws, clock):
    entry_id = api.capture("Backups run at 02:00 UTC")["id"]
    created = clock.now_ms()
    clock.advance(days=3)
    state = api.update(entry_id, "Backups run at 02:00 UTC")
    assert state["revisionCount"] == 0 and state["revisions"] == []
    assert state["updatedAt"] == clock.now_ms() != created
    assert state["createdAt"] == created
    assert ws.conn.execute("SELECT COUNT(*) FROM revisions").fetchone()[0] == 0


def test_update_case_only_change_is_a_revision(api):
    entry_id = api.capture("use tabs")["id"]
    state = api.update(entry_id, "Use Tabs")
    assert state["content"] == "Use Tabs" and state["revisionCount"] == 1


# ---- setStatus -------------------------------------------------------------------------------


def test_set_status_each_value(api, make_entry):
    entry_id = make_entry()
    for status in ["draft", "deprecated", "canonical", "deprecated"]:
        state = api.set_status(entry_id, status)
        assert state["status"] == status
        assert api.get_entry(entry_id)["status"] == status


# ---- forget ----------------------------------------------------------------------------------


def test_forget_removes_everything(api, ws, make_entry):
    target = api.capture(
        "The zanzibarian widget registry is forgotten soon", tags=["doomed", "x"], kind="episodic"
    )["id"]
    api.append(target, "second paragraph about zanzibarian widgets")
    api.update(target, "rewritten zanzibarian widget registry note")
    out_peer, in_peer, sym_peer = make_entry(), make_entry(), make_entry()
    other_tagged = make_entry(tags=["x"])
    api.link(target, out_peer, "supersedes")
    api.link(in_peer, target, "caused_by")
    api.link(sym_peer, target, "relates_to")
    api.link(out_peer, in_peer, "relates_to")  # unrelated edge survives
    assert fts_rowcount(ws, "zanzibarian") == 1

    assert api.forget(target) == {"forgotten": True, "id": target}

    conn = ws.conn
    assert conn.execute("SELECT COUNT(*) FROM entries WHERE id = ?", (target,)).fetchone()[0] == 0
    assert (
        conn.execute("SELECT COUNT(*) FROM tags WHERE entry_id = ?", (target,)).fetchone()[0] == 0
    )
    assert (
        conn.execute(
            "SELECT COUNT(*) FROM edges WHERE src = ? OR dst = ?", (target, target)
        ).fetchone()[0]
        == 0
    )
    assert (
        conn.execute("SELECT COUNT(*) FROM revisions WHERE entry_id = ?", (target,)).fetchone()[0]
        == 0
    )
    assert fts_rowcount(ws, "zanzibarian") == 0
    assert fts_rowcount(ws, "widget") == 0
    conn.execute("INSERT INTO entries_fts(entries_fts, rank) VALUES ('integrity-check', 1)")
    with pytest.raises(NotFound):
        api.get_entry(target)
    assert api.get_entry(out_peer)["edgeCount"] == 1  # only the unrelated edge is left
    assert api.get_entry(other_tagged)["tags"] == ["x"]
    assert {t["tag"]: t["count"] for t in api.get_tags()["tags"]} == {"x": 1}
    assert api.get_count()["count"] == 4


def test_forget_twice_is_not_found(api, make_entry):
    entry_id = make_entry()
    api.forget(entry_id)
    with pytest.raises(NotFound):
        api.forget(entry_id)


# ---- link / unlink ---------------------------------------------------------------------------


@pytest.mark.parametrize("edge_type", EDGE_TYPES)
def test_link_each_type(api, make_entry, clock, edge_type):
    assert len(EDGE_TYPES) == 8
    src, dst = make_entry(kind="episodic"), make_entry(kind="episodic")
    result = api.link(src, dst, edge_type)
    assert result["created"] is True
    edge = result["edge"]
    assert edge["type"] == edge_type
    assert {edge["src"], edge["dst"]} == {src, dst}
    if edge_type != "relates_to":
        assert (edge["src"], edge["dst"]) == (src, dst)
    assert edge["weight"] == 1.0 and edge["provenance"] == "explicit"
    assert edge["metadata"] is None
    assert edge["createdAt"] == edge["updatedAt"] == clock.now_ms()
    assert api.get_entry(src)["edgeCount"] == 1 and api.get_entry(dst)["edgeCount"] == 1


@pytest.mark.parametrize("provenance", ["explicit", "inferred", "system"])
def test_link_each_provenance(api, make_entry, provenance):
    edge = api.link(make_entry(), make_entry(), "about_person", provenance=provenance)["edge"]
    assert edge["provenance"] == provenance


@pytest.mark.parametrize("weight", [1, 1.0, 0.5, 1e-9])
def test_link_weight_in_range(api, make_entry, weight):
    assert api.link(make_entry(), make_entry(), "part_of_project", weight=weight)["edge"][
        "weight"
    ] == float(weight)


def test_relink_updates_weight_and_provenance(api, ws, make_entry, clock):
    a, b = make_entry(), make_entry()
    first = api.link(
        a,
        b,
        "document_of",
        weight=0.3,
        provenance="inferred",
        metadata={"why": "same ticket", "n": 2},
    )
    created_at = first["edge"]["createdAt"]
    clock.advance(seconds=9)
    again = api.link(a, b, "document_of", weight=0.8, provenance="explicit")
    assert again["created"] is False
    assert again["edge"]["weight"] == 0.8 and again["edge"]["provenance"] == "explicit"
    assert again["edge"]["metadata"] == {"why": "same ticket", "n": 2}  # kept when not given
    assert again["edge"]["createdAt"] == created_at
    assert again["edge"]["updatedAt"] == clock.now_ms()
    third = api.link(a, b, "document_of", metadata={"why": "changed"})
    assert third["edge"]["metadata"] == {"why": "changed"}
    assert third["edge"]["weight"] == 1.0  # an omitted weight is the default, not "unchanged"
    assert ws.conn.execute("SELECT COUNT(*) FROM edges").fetchone()[0] == 1


def test_relates_to_is_one_edge_in_canonical_order(api, ws, make_entry):
    a, b = make_entry(), make_entry()
    lo, hi = sorted([a, b])
    first = api.link(hi, lo, "relates_to", weight=0.4)
    assert (first["edge"]["src"], first["edge"]["dst"]) == (lo, hi)
    second = api.link(lo, hi, "relates_to", weight=0.6)
    assert second["created"] is False and second["edge"]["weight"] == 0.6
    assert ws.conn.execute("SELECT src, dst, weight FROM edges").fetchall() == [(lo, hi, 0.6)]
    assert api.unlink(hi, lo, "relates_to") == {"removed": True}
    assert ws.conn.execute("SELECT COUNT(*) FROM edges").fetchone()[0] == 0


def test_directed_types_keep_both_directions(api, ws, make_entry):
    a, b = make_entry(), make_entry()
    api.link(a, b, "caused_by")
    assert api.link(b, a, "caused_by")["created"] is True
    assert ws.conn.execute("SELECT COUNT(*) FROM edges").fetchone()[0] == 2
    assert api.unlink(a, b, "caused_by") == {"removed": True}
    assert ws.conn.execute("SELECT src, dst FROM edges").fetchall() == [(b, a)]


def test_same_pair_different_types_are_separate_edges(api, ws, make_entry):
    a, b = make_entry(), make_entry()
    api.link(a, b, "supersedes")
    api.link(a, b, "caused_by")
    api.link(a, b, "relates_to")
    assert ws.conn.execute("SELECT COUNT(*) FROM edges").fetchone()[0] == 3
    assert api.get_entry(a)["edgeCount"] == 3


def test_kind_gate_decided_needs_episodic_source(api, make_entry):
    event, fact = make_entry(kind="episodic"), make_entry(kind="semantic")
    assert api.link(event, fact, "decided")["created"] is True  # dst may be anything
    assert api.link(event, make_entry(kind="episodic"), "decided")["created"] is True
    with pytest.raises(KindGateViolation, match="episodic src"):
        api.link(fact, event, "decided")


def test_kind_gate_follows_needs_both_episodic(api, make_entry):
    e1, e2 = make_entry(kind="episodic"), make_entry(kind="episodic")
    fact = make_entry(kind="semantic")
    assert api.link(e2, e1, "follows")["created"] is True
    with pytest.raises(KindGateViolation, match="episodic dst"):
        api.link(e1, fact, "follows")
    with pytest.raises(KindGateViolation, match="episodic src"):
        api.link(fact, e1, "follows")


def test_kind_gate_default_kind_is_semantic(api, make_entry):
    unclassified, event = make_entry(), make_entry(kind="episodic")
    with pytest.raises(KindGateViolation):
        api.link(unclassified, event, "decided")


@pytest.mark.parametrize("edge_type", [t for t in EDGE_TYPES if t not in ("decided", "follows")])
def test_ungated_types_accept_semantic_ends(api, make_entry, edge_type):
    assert api.link(make_entry(), make_entry(), edge_type)["created"] is True


def test_unlink_reports_whether_something_was_removed(api, make_entry):
    a, b = make_entry(), make_entry()
    assert api.unlink(a, b, "caused_by") == {"removed": False}
    api.link(a, b, "caused_by")
    assert api.unlink(b, a, "caused_by") == {"removed": False}  # directed: wrong way round
    assert api.unlink(a, b, "relates_to") == {"removed": False}  # other type
    assert api.unlink(a, b, "caused_by") == {"removed": True}
    assert api.unlink(a, b, "caused_by") == {"removed": False}


def test_unlink_of_missing_entries_removes_nothing(api):
    missing = "123e4567-e89b-42d3-a456-426614174000"
    other = "00000000-0000-4000-8000-000000000000"
    assert api.unlink(missing, other, "relates_to") == {"removed": False}


def test_link_metadata_round_trip(api, make_entry):
    meta = {"reason": "ticket MS-12", "nested": {"list": [1, 2.5, None, True]}, "ünï": "✓"}
    edge = api.link(make_entry(), make_entry(), "relates_to", metadata=meta)["edge"]
    assert edge["metadata"] == meta


def test_append_cannot_push_an_entry_past_32_tags(api, ws):
    entry_id = api.capture("a tagged entry", tags=[f"first-{i}" for i in range(30)])["id"]
    before = snapshot(ws)
    with pytest.raises(InvalidArgument, match="32"):
        api.append(entry_id, "more", tags=["a", "b", "c"])
    assert snapshot(ws) == before
    api.append(entry_id, "two more fit", tags=["a", "b"])
    assert len(api.get_entry(entry_id)["tags"]) == 32
