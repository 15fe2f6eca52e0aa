"""The vector arm in recall: KNN via sqlite-vec, prefilters respected, shown in the breakdown."""

from pydantic import TypeAdapter

from minisphere.engine.clock import iso_utc
from minisphere.engine.workspace import Workspace
from minisphere.wire.recall_answer import RecallAnswer
from tests.engine.vectors.helpers import ChosenVectors, at_cosine

QUERY = "how do we ship code"


def bound(tmp_path, clock, table):
    return Workspace(
        tmp_path / "r.db",
        clock=clock,
        synchronous="NORMAL",
        embedder=ChosenVectors({QUERY: at_cosine(1.0), **table}),
    )


def test_vectors_breakdown_shows_the_vector_arm(tmp_path, clock):
    ws = bound(tmp_path, clock, {"Releases go out through the deploy pipeline": at_cosine(0.7)})
    target = ws.capture("Releases go out through the deploy pipeline")["id"]
    ws.capture("Quarterly planning happens in March")
    result = ws.recall(QUERY)
    assert result["queryUsed"]["vector"] == {"arm": "on", "provider": "chosen-8"}
    top = result["items"][0]
    assert top["id"] == target  # no shared keyword: only the vector arm can find it
    vector = top["breakdown"]["vector"]
    assert vector["rank"] == 1 and abs(vector["cosine"] - 0.7) < 1e-4 and vector["rrf"] > 0
    assert top["breakdown"]["keyword"] is None
    assert result["queryUsed"]["arms"]["vector"] >= 1


def test_vectors_prefilters_apply_to_the_vector_arm(tmp_path, clock):
    texts = {
        "semantic shipping note": 0.9,
        "episodic shipping event": 0.8,
        "tagged shipping note": 0.7,
    }
    ws = bound(
        tmp_path, clock, {t: at_cosine(c, axis=i + 1) for i, (t, c) in enumerate(texts.items())}
    )
    semantic = ws.capture("semantic shipping note", kind="semantic")["id"]
    episodic = ws.capture("episodic shipping event", kind="episodic")["id"]
    tagged = ws.capture("tagged shipping note", kind="semantic", tags=["ops"])["id"]
    assert [i["id"] for i in ws.recall(QUERY, kind="episodic")["items"]] == [episodic]
    assert [i["id"] for i in ws.recall(QUERY, tag="ops")["items"]] == [tagged]
    ws.set_status(semantic, "deprecated")
    ids = [i["id"] for i in ws.recall(QUERY)["items"]]
    assert semantic not in ids and set(ids) == {episodic, tagged}


def test_vectors_auto_pattern_entries_never_come_back(tmp_path, clock):
    ws = bound(
        tmp_path, clock, {"pattern exhaust": at_cosine(0.95), "real note": at_cosine(0.5, axis=2)}
    )
    ws.capture("pattern exhaust", tags=["auto-pattern"])
    real = ws.capture("real note")["id"]
    assert [i["id"] for i in ws.recall(QUERY)["items"]] == [real]


def test_vectors_keyword_and_vector_agree_on_top(vws):
    target = vws.capture("The staging database password rotates every 30 days")["id"]
    for i in range(5):
        vws.capture(f"Unrelated note {i} about lunch menus and parking spot {i}")
    result = vws.recall("staging database password rotation")
    top = result["items"][0]
    assert top["id"] == target
    assert top["breakdown"]["keyword"]["rank"] == 1 and top["breakdown"]["vector"]["rank"] == 1
    assert top["breakdown"]["fused"] > top["breakdown"]["vector"]["rrf"]


def test_vectors_recall_on_a_read_only_connection(tmp_path, clock):
    """How a read pool runs a bound recall: its own mode=ro connection, sqlite-vec loaded there."""
    from minisphere.hosting.read_pool import ReadPool

    ws = bound(tmp_path, clock, {"Releases go out through the deploy pipeline": at_cosine(0.7)})
    target = ws.capture("Releases go out through the deploy pipeline")["id"]
    reader = ReadPool(ws.path, clock=clock, hooks=ws.hooks)
    try:
        result, _ = reader.read("recall", {"query": QUERY})
    finally:
        reader.close()
    assert (
        result["items"][0]["id"] == target
        and result["items"][0]["breakdown"]["vector"]["rank"] == 1
    )


def test_recall_does_not_follow_the_bindings_auto_links_but_follows_explicit_edges(
    tmp_path, clock, monkeypatch
):
    """An auto-link is a cosine turned into an edge: followed by the graph arm, it let the dense
    arm reorder queries the hybrid leaves in lexical order (held-out conversations lost nDCG@10)."""
    from minisphere.engine.retrieval import tuning as T

    base, near, other = (
        "keeper logbook about the lighthouse",
        "lighthouse lamp oil delivery",
        "lighthouse paint for the tower",
    )
    ws = bound(
        tmp_path,
        clock,
        {
            base: at_cosine(1.0, axis=2),
            near: at_cosine(0.95, axis=3),
            other: at_cosine(0.0, axis=4),
        },
    )
    base_id = ws.capture(base)["id"]
    result = ws.capture(near)
    assert [link["id"] for link in result["autoLinked"]] == [base_id]
    other_id = ws.capture(other)["id"]
    ws.link(other_id, base_id, "relates_to", provenance="inferred", weight=0.9)  # an agent's edge

    def graph_support(query: str) -> dict:
        return {i["id"]: i["breakdown"]["graph"] for i in ws.recall(query)["items"]}

    support = graph_support("keeper logbook")
    assert support.get(result["id"]) is None  # reached over the auto-link: not followed
    assert support[other_id] is not None  # the explicit inferred edge still counts
    monkeypatch.setattr(T, "GRAPH_FOLLOWS_AUTO_LINKS", True)
    assert graph_support("keeper logbook")[result["id"]] is not None
    ws.close()


def test_a_bound_recall_explains_how_its_arms_were_weighed(tmp_path, clock):
    """queryUsed.fusion shows the lexical share the query got and the agreement it was judged
    by, so a reader can tell a page the dense arm ordered from one it only re-sorted."""
    ws = bound(tmp_path, clock, {"Releases go out through the deploy pipeline": at_cosine(0.7)})
    ws.capture("Releases go out through the deploy pipeline")
    ws.capture("We ship code every Friday after the review")
    answer = ws.recall(QUERY)
    TypeAdapter(RecallAnswer).validate_python(answer)  # the published answer schema describes it
    fusion = answer["queryUsed"]["fusion"]
    assert set(fusion) == {
        "lexicalShare",
        "lexicalMargin",
        "support",
        "denseMargin",
        "subjectLed",
        "lexicalLed",
    }
    assert all(
        0.0 <= fusion[k] <= 1.0 for k in ("lexicalShare", "lexicalMargin", "support", "denseMargin")
    )
    assert fusion["lexicalLed"] == (fusion["lexicalShare"] >= 1.0)


def test_an_unbound_recall_has_no_fusion_state(tmp_path, clock):
    ws = Workspace(tmp_path / "plain.db", clock=clock, synchronous="NORMAL")
    ws.capture("We ship code every Friday after the review")
    assert "fusion" not in ws.recall(QUERY)["queryUsed"]


def test_a_recall_as_of_a_moment_is_lexical_and_says_the_vector_arm_was_off(tmp_path, clock):
    ws = bound(tmp_path, clock, {"Releases go out through the deploy pipeline": at_cosine(0.7)})
    ws.capture("Releases go out through the deploy pipeline")
    result = ws.recall(QUERY, asOf=iso_utc(clock.now_ms()))
    assert result["items"] == []  # only the vector arm, on today's words, could find it
    state = result["queryUsed"]["vector"]
    assert state["arm"] == "off" and "asOf" in state["reason"]
    TypeAdapter(RecallAnswer).validate_python(result)
