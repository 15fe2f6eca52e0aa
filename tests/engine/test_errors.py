"""Every refused input raises its named error type and leaves the database exactly as it was
(schema, every table row, and the FTS index shadow tables)."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minisphere.engine import constants as C
from minisphere.engine.methods import METHODS
from minisphere.engine.workspace import Workspace
from minisphere.errors import (
    ContentTooLarge,
    InvalidArgument,
    KindGateViolation,
    MiniSphereError,
    NotFound,
    SelfLink,
    WorkspaceClosed,
)
from tests.engine.helpers import snapshot

MISSING = "123e4567-e89b-42d3-a456-426614174000"
UPPER = "123E4567-E89B-42D3-A456-426614174000"


@pytest.fixture
def ids(ws):
    """A non-trivial workspace: entries of both kinds, tags, an edge and a revision."""
    made = {
        "sem": ws.capture("semantic fact one", tags=["a", "b"], kind="semantic")["id"],
        "sem2": ws.capture("semantic fact two", kind="semantic")["id"],
        "ep": ws.capture("episode one happened", kind="episodic")["id"],
        "ep2": ws.capture("episode two happened", kind="episodic")["id"],
        # content this close to the limit cannot take a 20-byte addition
        "big": ws.capture("b" * (C.MAX_CONTENT_BYTES - 10))["id"],
    }
    ws.link(made["sem"], made["ep"], "relates_to", metadata={"k": "v"})
    ws.append(made["sem2"], "an addendum")
    return made


def too_many_tags():
    return [f"tag-{i}" for i in range(C.MAX_TAGS_PER_ENTRY + 1)]


# (case id, method, body builder taking the ids fixture, expected error type)
CASES = [
    # --- capture: content
    ("capture-missing-content", "capture", lambda i: {}, InvalidArgument),
    ("capture-content-int", "capture", lambda i: {"content": 42}, InvalidArgument),
    ("capture-content-null", "capture", lambda i: {"content": None}, InvalidArgument),
    ("capture-content-bytes", "capture", lambda i: {"content": b"bytes"}, InvalidArgument),
    ("capture-content-list", "capture", lambda i: {"content": ["a"]}, InvalidArgument),
    ("capture-empty", "capture", lambda i: {"content": ""}, InvalidArgument),
    ("capture-whitespace", "capture", lambda i: {"content": " \t\n\r "}, InvalidArgument),
    (
        "capture-unicode-whitespace",
        "capture",
        lambda i: {"content": "\u3000\u00a0\u2003\u2029"},
        InvalidArgument,
    ),
    ("capture-nul", "capture", lambda i: {"content": "a\x00b"}, InvalidArgument),
    (
        "capture-lone-surrogate",
        "capture",
        lambda i: {"content": "broken \ud800 text"},
        InvalidArgument,
    ),
    (
        "capture-too-large",
        "capture",
        lambda i: {"content": "a" * (C.MAX_CONTENT_BYTES + 1)},
        ContentTooLarge,
    ),
    (
        "capture-too-large-multibyte",
        "capture",
        lambda i: {"content": "é" * (C.MAX_CONTENT_BYTES // 2 + 1)},
        ContentTooLarge,
    ),
    ("capture-not-an-object", "capture", lambda i: ["content"], InvalidArgument),
    ("capture-string-body", "capture", lambda i: "content", InvalidArgument),
    (
        "capture-unknown-field",
        "capture",
        lambda i: {"content": "x", "colour": "red"},
        InvalidArgument,
    ),
    # --- capture: enums
    (
        "capture-status-unknown",
        "capture",
        lambda i: {"content": "x", "status": "final"},
        InvalidArgument,
    ),
    (
        "capture-status-case",
        "capture",
        lambda i: {"content": "x", "status": "Canonical"},
        InvalidArgument,
    ),
    ("capture-status-null", "capture", lambda i: {"content": "x", "status": None}, InvalidArgument),
    (
        "capture-kind-unknown",
        "capture",
        lambda i: {"content": "x", "kind": "fact"},
        InvalidArgument,
    ),
    ("capture-kind-int", "capture", lambda i: {"content": "x", "kind": 1}, InvalidArgument),
    (
        "capture-volatility-unknown",
        "capture",
        lambda i: {"content": "x", "volatility": "forever"},
        InvalidArgument,
    ),
    (
        "capture-claim-lowercase",
        "capture",
        lambda i: {"content": "x", "claimTag": "verified"},
        InvalidArgument,
    ),
    (
        "capture-claim-unknown",
        "capture",
        lambda i: {"content": "x", "claimTag": "MAYBE"},
        InvalidArgument,
    ),
    # --- capture: numbers
    (
        "capture-importance-string",
        "capture",
        lambda i: {"content": "x", "importance": "0.5"},
        InvalidArgument,
    ),
    (
        "capture-importance-bool",
        "capture",
        lambda i: {"content": "x", "importance": True},
        InvalidArgument,
    ),
    (
        "capture-importance-high",
        "capture",
        lambda i: {"content": "x", "importance": 1.5},
        InvalidArgument,
    ),
    (
        "capture-importance-negative",
        "capture",
        lambda i: {"content": "x", "importance": -0.1},
        InvalidArgument,
    ),
    (
        "capture-importance-nan",
        "capture",
        lambda i: {"content": "x", "importance": float("nan")},
        InvalidArgument,
    ),
    (
        "capture-importance-inf",
        "capture",
        lambda i: {"content": "x", "importance": float("inf")},
        InvalidArgument,
    ),
    # --- capture: tags, source, evidence
    ("capture-tags-string", "capture", lambda i: {"content": "x", "tags": "a,b"}, InvalidArgument),
    ("capture-tags-int", "capture", lambda i: {"content": "x", "tags": [1]}, InvalidArgument),
    ("capture-tags-null", "capture", lambda i: {"content": "x", "tags": None}, InvalidArgument),
    ("capture-tag-empty", "capture", lambda i: {"content": "x", "tags": [""]}, InvalidArgument),
    (
        "capture-tag-whitespace",
        "capture",
        lambda i: {"content": "x", "tags": ["ok", " \t "]},
        InvalidArgument,
    ),
    (
        "capture-tag-control",
        "capture",
        lambda i: {"content": "x", "tags": ["bell\x07"]},
        InvalidArgument,
    ),
    (
        "capture-tag-format-char",
        "capture",
        lambda i: {"content": "x", "tags": ["zero\u200bwidth"]},
        InvalidArgument,
    ),
    (
        "capture-too-many-tags",
        "capture",
        lambda i: {"content": "x", "tags": too_many_tags()},
        InvalidArgument,
    ),
    (
        "capture-tag-too-long",
        "capture",
        lambda i: {"content": "x", "tags": ["t" * (C.MAX_TAG_CHARS + 1)]},
        InvalidArgument,
    ),
    (
        "capture-tag-too-long-after-nfkc",
        "capture",  # U+FDFA expands to 18 characters under NFKC
        lambda i: {"content": "x", "tags": ["\ufdfa" * 4]},
        InvalidArgument,
    ),
    (
        "capture-tag-reserved-stale",
        "capture",
        lambda i: {"content": "x", "tags": ["stale:as-of:2026-01-01"]},
        InvalidArgument,
    ),
    (
        "capture-tag-reserved-stale-case",
        "capture",
        lambda i: {"content": "x", "tags": ["ok", "STALE:as-of"]},
        InvalidArgument,
    ),
    ("capture-source-int", "capture", lambda i: {"content": "x", "source": 5}, InvalidArgument),
    (
        "capture-source-too-long",
        "capture",
        lambda i: {"content": "x", "source": "s" * (C.MAX_SOURCE_CHARS + 1)},
        InvalidArgument,
    ),
    (
        "capture-evidence-too-long",
        "capture",
        lambda i: {"content": "x", "evidenceRef": "e" * (C.MAX_EVIDENCE_REF_CHARS + 1)},
        InvalidArgument,
    ),
    (
        "capture-evidence-dict",
        "capture",
        lambda i: {"content": "x", "evidenceRef": {"u": 1}},
        InvalidArgument,
    ),
    # --- append
    ("append-malformed-id", "append", lambda i: {"id": "abc", "addition": "x"}, InvalidArgument),
    ("append-uppercase-id", "append", lambda i: {"id": UPPER, "addition": "x"}, InvalidArgument),
    (
        "append-undashed-id",
        "append",
        lambda i: {"id": MISSING.replace("-", ""), "addition": "x"},
        InvalidArgument,
    ),
    ("append-id-int", "append", lambda i: {"id": 7, "addition": "x"}, InvalidArgument),
    (
        "append-id-trailing-newline",
        "append",
        lambda i: {"id": i["sem"] + "\n", "addition": "x"},
        InvalidArgument,
    ),
    ("append-missing-entry", "append", lambda i: {"id": MISSING, "addition": "x"}, NotFound),
    ("append-empty", "append", lambda i: {"id": i["sem"], "addition": ""}, InvalidArgument),
    (
        "append-whitespace",
        "append",
        lambda i: {"id": i["sem"], "addition": "  \n"},
        InvalidArgument,
    ),
    ("append-nul", "append", lambda i: {"id": i["sem"], "addition": "\x00"}, InvalidArgument),
    (
        "append-surrogate",
        "append",
        lambda i: {"id": i["sem"], "addition": "\udfff"},
        InvalidArgument,
    ),
    (
        "append-addition-too-large",
        "append",
        lambda i: {"id": i["sem"], "addition": "a" * (C.MAX_CONTENT_BYTES + 1)},
        ContentTooLarge,
    ),
    (
        "append-result-too-large",
        "append",
        lambda i: {"id": i["big"], "addition": "c" * 20},
        ContentTooLarge,
    ),
    (
        "append-reserved-tag",
        "append",
        lambda i: {"id": i["sem"], "addition": "x", "tags": ["stale:as-of"]},
        InvalidArgument,
    ),
    (
        "append-too-many-tags",
        "append",
        lambda i: {"id": i["sem"], "addition": "x", "tags": too_many_tags()},
        InvalidArgument,
    ),
    (
        "append-importance-high",
        "append",
        lambda i: {"id": i["sem"], "addition": "x", "importance": 2},
        InvalidArgument,
    ),
    (
        "append-claim-unknown",
        "append",
        lambda i: {"id": i["sem"], "addition": "x", "claimTag": "TRUE"},
        InvalidArgument,
    ),
    (
        "append-status-not-an-option",
        "append",
        lambda i: {"id": i["sem"], "addition": "x", "status": "draft"},
        InvalidArgument,
    ),
    ("append-addition-int", "append", lambda i: {"id": i["sem"], "addition": 3}, InvalidArgument),
    # --- update
    (
        "update-malformed-id",
        "update",
        lambda i: {"id": "not-a-uuid", "content": "x"},
        InvalidArgument,
    ),
    ("update-missing-entry", "update", lambda i: {"id": MISSING, "content": "x"}, NotFound),
    ("update-empty", "update", lambda i: {"id": i["sem"], "content": ""}, InvalidArgument),
    ("update-whitespace", "update", lambda i: {"id": i["sem"], "content": "\t"}, InvalidArgument),
    (
        "update-too-large",
        "update",
        lambda i: {"id": i["sem"], "content": "u" * (C.MAX_CONTENT_BYTES + 1)},
        ContentTooLarge,
    ),
    ("update-content-int", "update", lambda i: {"id": i["sem"], "content": 1}, InvalidArgument),
    (
        "update-unknown-field",
        "update",
        lambda i: {"id": i["sem"], "content": "x", "tags": []},
        InvalidArgument,
    ),
    # --- setStatus
    (
        "set-status-unknown",
        "setStatus",
        lambda i: {"id": i["sem"], "status": "archived"},
        InvalidArgument,
    ),
    ("set-status-missing-status", "setStatus", lambda i: {"id": i["sem"]}, InvalidArgument),
    (
        "set-status-missing-entry",
        "setStatus",
        lambda i: {"id": MISSING, "status": "draft"},
        NotFound,
    ),
    (
        "set-status-malformed-id",
        "setStatus",
        lambda i: {"id": "x", "status": "draft"},
        InvalidArgument,
    ),
    # --- forget
    ("forget-missing-entry", "forget", lambda i: {"id": MISSING}, NotFound),
    ("forget-malformed-id", "forget", lambda i: {"id": "../../etc/passwd"}, InvalidArgument),
    ("forget-id-int", "forget", lambda i: {"id": 123}, InvalidArgument),
    ("forget-no-id", "forget", lambda i: {}, InvalidArgument),
    # --- link
    (
        "link-self",
        "link",
        lambda i: {"src": i["sem"], "dst": i["sem"], "type": "relates_to"},
        SelfLink,
    ),
    (
        "link-self-directed",
        "link",
        lambda i: {"src": i["ep"], "dst": i["ep"], "type": "follows"},
        SelfLink,
    ),
    (
        "link-missing-src",
        "link",
        lambda i: {"src": MISSING, "dst": i["sem"], "type": "supersedes"},
        NotFound,
    ),
    (
        "link-missing-dst",
        "link",
        lambda i: {"src": i["sem"], "dst": MISSING, "type": "supersedes"},
        NotFound,
    ),
    (
        "link-malformed-src",
        "link",
        lambda i: {"src": "x", "dst": i["sem"], "type": "supersedes"},
        InvalidArgument,
    ),
    (
        "link-malformed-dst",
        "link",
        lambda i: {"src": i["sem"], "dst": UPPER, "type": "supersedes"},
        InvalidArgument,
    ),
    (
        "link-type-unknown",
        "link",
        lambda i: {"src": i["sem"], "dst": i["sem2"], "type": "likes"},
        InvalidArgument,
    ),
    (
        "link-type-case",
        "link",
        lambda i: {"src": i["sem"], "dst": i["sem2"], "type": "RELATES_TO"},
        InvalidArgument,
    ),
    ("link-type-missing", "link", lambda i: {"src": i["sem"], "dst": i["sem2"]}, InvalidArgument),
    (
        "link-provenance-unknown",
        "link",
        lambda i: {"src": i["sem"], "dst": i["sem2"], "type": "relates_to", "provenance": "manual"},
        InvalidArgument,
    ),
    (
        "link-weight-zero",
        "link",
        lambda i: {"src": i["sem"], "dst": i["sem2"], "type": "relates_to", "weight": 0},
        InvalidArgument,
    ),
    (
        "link-weight-negative",
        "link",
        lambda i: {"src": i["sem"], "dst": i["sem2"], "type": "relates_to", "weight": -0.5},
        InvalidArgument,
    ),
    (
        "link-weight-above-one",
        "link",
        lambda i: {"src": i["sem"], "dst": i["sem2"], "type": "relates_to", "weight": 1.0001},
        InvalidArgument,
    ),
    (
        "link-weight-string",
        "link",
        lambda i: {"src": i["sem"], "dst": i["sem2"], "type": "relates_to", "weight": "0.5"},
        InvalidArgument,
    ),
    (
        "link-weight-bool",
        "link",
        lambda i: {"src": i["sem"], "dst": i["sem2"], "type": "relates_to", "weight": True},
        InvalidArgument,
    ),
    (
        "link-weight-nan",
        "link",
        lambda i: {"src": i["sem"], "dst": i["sem2"], "type": "relates_to", "weight": float("nan")},
        InvalidArgument,
    ),
    (
        "link-decided-from-semantic",
        "link",
        lambda i: {"src": i["sem"], "dst": i["ep"], "type": "decided"},
        KindGateViolation,
    ),
    (
        "link-follows-semantic-dst",
        "link",
        lambda i: {"src": i["ep"], "dst": i["sem"], "type": "follows"},
        KindGateViolation,
    ),
    (
        "link-follows-semantic-src",
        "link",
        lambda i: {"src": i["sem"], "dst": i["ep"], "type": "follows"},
        KindGateViolation,
    ),
    (
        "link-follows-both-semantic",
        "link",
        lambda i: {"src": i["sem"], "dst": i["sem2"], "type": "follows"},
        KindGateViolation,
    ),
    (
        "link-metadata-list",
        "link",
        lambda i: {"src": i["sem"], "dst": i["sem2"], "type": "relates_to", "metadata": [1, 2]},
        InvalidArgument,
    ),
    (
        "link-metadata-nan",
        "link",
        lambda i: {
            "src": i["sem"],
            "dst": i["sem2"],
            "type": "relates_to",
            "metadata": {"x": float("nan")},
        },
        InvalidArgument,
    ),
    (
        "link-metadata-not-json",
        "link",
        lambda i: {
            "src": i["sem"],
            "dst": i["sem2"],
            "type": "relates_to",
            "metadata": {"x": object()},
        },
        InvalidArgument,
    ),
    (
        "link-metadata-too-large",
        "link",
        lambda i: {
            "src": i["sem"],
            "dst": i["sem2"],
            "type": "relates_to",
            "metadata": {"blob": "m" * C.MAX_METADATA_BYTES},
        },
        ContentTooLarge,
    ),
    (
        "link-existing-edge-bad-weight",
        "link",
        lambda i: {"src": i["ep"], "dst": i["sem"], "type": "relates_to", "weight": 2},
        InvalidArgument,
    ),
    (
        "link-unknown-field",
        "link",
        lambda i: {"src": i["sem"], "dst": i["sem2"], "type": "relates_to", "strength": 1},
        InvalidArgument,
    ),
    # --- unlink
    (
        "unlink-malformed-src",
        "unlink",
        lambda i: {"src": "nope", "dst": i["ep"], "type": "relates_to"},
        InvalidArgument,
    ),
    (
        "unlink-malformed-dst",
        "unlink",
        lambda i: {"src": i["sem"], "dst": "nope", "type": "relates_to"},
        InvalidArgument,
    ),
    (
        "unlink-id-trailing-newline",
        "unlink",
        lambda i: {"src": i["sem"] + "\n", "dst": i["ep"], "type": "relates_to"},
        InvalidArgument,
    ),
    (
        "unlink-type-unknown",
        "unlink",
        lambda i: {"src": i["sem"], "dst": i["ep"], "type": "related"},
        InvalidArgument,
    ),
    (
        "unlink-extra-weight",
        "unlink",
        lambda i: {"src": i["sem"], "dst": i["ep"], "type": "relates_to", "weight": 1},
        InvalidArgument,
    ),
    # --- reads
    ("get-entry-malformed", "getEntry", lambda i: {"id": "abc"}, InvalidArgument),
    ("get-entry-missing", "getEntry", lambda i: {"id": MISSING}, NotFound),
    ("get-entry-trailing-newline", "getEntry", lambda i: {"id": MISSING + "\n"}, InvalidArgument),
    ("get-entry-padded", "getEntry", lambda i: {"id": " " + i["sem"]}, InvalidArgument),
    ("get-entry-no-id", "getEntry", lambda i: {}, InvalidArgument),
    ("get-entry-extra", "getEntry", lambda i: {"id": i["sem"], "full": True}, InvalidArgument),
    ("list-recent-n-zero", "listRecent", lambda i: {"n": 0}, InvalidArgument),
    (
        "list-recent-n-too-big",
        "listRecent",
        lambda i: {"n": C.LIST_RECENT_MAX_N + 1},
        InvalidArgument,
    ),
    ("list-recent-n-string", "listRecent", lambda i: {"n": "5"}, InvalidArgument),
    ("list-recent-n-bool", "listRecent", lambda i: {"n": True}, InvalidArgument),
    ("list-recent-n-fraction", "listRecent", lambda i: {"n": 5.5}, InvalidArgument),
    ("list-recent-tag-empty", "listRecent", lambda i: {"tag": "  "}, InvalidArgument),
    ("list-recent-tag-int", "listRecent", lambda i: {"tag": 3}, InvalidArgument),
    ("list-recent-unknown", "listRecent", lambda i: {"limit": 5}, InvalidArgument),
    ("connections-missing", "connections", lambda i: {"id": MISSING}, NotFound),
    ("connections-malformed", "connections", lambda i: {"id": ""}, InvalidArgument),
    ("graph-view-no-seeds", "graphView", lambda i: {"seedIds": []}, InvalidArgument),
    ("graph-view-seed-string", "graphView", lambda i: {"seedIds": i["sem"]}, InvalidArgument),
    (
        "graph-view-seed-malformed",
        "graphView",
        lambda i: {"seedIds": [i["sem"], "bad"]},
        InvalidArgument,
    ),
    (
        "graph-view-seed-trailing-newline",
        "graphView",
        lambda i: {"seedIds": [i["sem"] + "\n"]},
        InvalidArgument,
    ),
    (
        "graph-view-too-many-seeds",
        "graphView",
        lambda i: {"seedIds": [MISSING] * 51},
        InvalidArgument,
    ),
    (
        "graph-view-hops-4",
        "graphView",
        lambda i: {"seedIds": [i["sem"]], "hops": 4},
        InvalidArgument,
    ),
    (
        "graph-view-hops-negative",
        "graphView",
        lambda i: {"seedIds": [i["sem"]], "hops": -1},
        InvalidArgument,
    ),
    (
        "graph-view-hops-string",
        "graphView",
        lambda i: {"seedIds": [i["sem"]], "hops": "2"},
        InvalidArgument,
    ),
    (
        "graph-view-hops-bool",
        "graphView",
        lambda i: {"seedIds": [i["sem"]], "hops": False},
        InvalidArgument,
    ),
    (
        "graph-view-snake-and-camel",
        "graphView",
        lambda i: {"seedIds": [i["sem"]], "hopz": 1},
        InvalidArgument,
    ),
    ("get-tags-extra", "getTags", lambda i: {"x": 1}, InvalidArgument),
    ("get-count-extra", "getCount", lambda i: {"n": 1}, InvalidArgument),
    ("get-stats-extra", "getStats", lambda i: {"verbose": True}, InvalidArgument),
    ("get-brief-extra", "getBrief", lambda i: {"since": 0}, InvalidArgument),
    ("get-brief-not-an-object", "getBrief", lambda i: [], InvalidArgument),
    # --- dispatch
    ("unknown-method", "recallEverything", lambda i: {}, NotFound),
    ("snake-case-method-name", "get_entry", lambda i: {"id": i["sem"]}, NotFound),
]


@pytest.mark.parametrize("method, body, error", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused_and_nothing_written(ws, ids, method, body, error):
    before = snapshot(ws)
    with pytest.raises(error) as caught:
        ws.call(method, body(ids))
    assert type(caught.value) is error  # exactly the named type, not just a base class
    assert caught.value.message and caught.value.code == error.code
    assert caught.value.to_dict() == {
        "error": {"code": error.code, "message": caught.value.message}
    }
    assert snapshot(ws) == before


ENGINE_ERRORS = (InvalidArgument, ContentTooLarge, NotFound, KindGateViolation, SelfLink)
ARGUMENT_NAMES = sorted(
    {
        name
        for method in METHODS.values()
        for name in method.args.model_json_schema(by_alias=True)["properties"]
    }
)


def argument_values(ids):
    scalars = (
        st.sampled_from([*ids.values(), MISSING, UPPER])
        | st.none()
        | st.booleans()
        | st.integers(-5, 300)
        | st.floats(allow_nan=True, allow_infinity=True)
        | st.text(max_size=20)
        | st.sampled_from(["relates_to", "follows", "decided", "draft", "semantic", "VERIFIED"])
    )
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=2)
        ),
        max_leaves=4,
    )


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_any_refused_call_raises_one_named_engine_error_and_writes_nothing(ws, ids, data):
    """Arbitrary bodies on every method, with ids of real, missing and malformed entries: a
    call either succeeds or raises exactly one of the engine's named errors (never a
    TypeError, a pydantic or a SQLite error), and a refused call leaves the file as it was."""
    method = data.draw(st.sampled_from(sorted(METHODS)), label="method")
    body = data.draw(
        st.dictionaries(st.sampled_from(ARGUMENT_NAMES), argument_values(ids), max_size=4),
        label="body",
    )
    before = snapshot(ws)
    try:
        ws.call(method, body)
    except MiniSphereError as exc:
        assert type(exc) in ENGINE_ERRORS, exc
        assert exc.message and exc.to_dict() == {
            "error": {"code": type(exc).code, "message": exc.message}
        }
        assert snapshot(ws) == before


def test_error_codes_are_distinct():
    types = [
        InvalidArgument,
        ContentTooLarge,
        NotFound,
        KindGateViolation,
        SelfLink,
        WorkspaceClosed,
    ]
    assert len({t.code for t in types}) == len(types)
    assert all(issubclass(t, MiniSphereError) for t in types)


# The same refusals through the Python wrappers.
WRAPPER_CASES = [
    ("capture-empty", lambda ws, i: ws.capture("   "), InvalidArgument),
    (
        "capture-too-large",
        lambda ws, i: ws.capture("x" * (C.MAX_CONTENT_BYTES + 1)),
        ContentTooLarge,
    ),
    ("capture-bad-kind", lambda ws, i: ws.capture("x", kind="event"), InvalidArgument),
    ("capture-bad-tag", lambda ws, i: ws.capture("x", tags=["stale:x"]), InvalidArgument),
    ("capture-unknown-option", lambda ws, i: ws.capture("x", colour="red"), InvalidArgument),
    ("capture-importance-str", lambda ws, i: ws.capture("x", importance="1"), InvalidArgument),
    ("append-missing", lambda ws, i: ws.append(MISSING, "x"), NotFound),
    ("append-too-large", lambda ws, i: ws.append(i["big"], "y" * 20), ContentTooLarge),
    ("update-malformed", lambda ws, i: ws.update("abc", "x"), InvalidArgument),
    ("update-empty", lambda ws, i: ws.update(i["sem"], ""), InvalidArgument),
    ("set-status-bad", lambda ws, i: ws.set_status(i["sem"], "gone"), InvalidArgument),
    ("forget-missing", lambda ws, i: ws.forget(MISSING), NotFound),
    ("link-self", lambda ws, i: ws.link(i["sem"], i["sem"], "relates_to"), SelfLink),
    ("link-gate", lambda ws, i: ws.link(i["sem"], i["ep"], "decided"), KindGateViolation),
    ("link-missing", lambda ws, i: ws.link(i["sem"], MISSING, "relates_to"), NotFound),
    (
        "link-weight",
        lambda ws, i: ws.link(i["sem"], i["sem2"], "relates_to", weight=0.0),
        InvalidArgument,
    ),
    (
        "link-provenance",
        lambda ws, i: ws.link(i["sem"], i["sem2"], "relates_to", provenance="user"),
        InvalidArgument,
    ),
    ("unlink-type", lambda ws, i: ws.unlink(i["sem"], i["ep"], "linked"), InvalidArgument),
    ("get-entry-missing", lambda ws, i: ws.get_entry(MISSING), NotFound),
    ("list-recent-n", lambda ws, i: ws.list_recent(n=-1), InvalidArgument),
    ("connections-malformed", lambda ws, i: ws.connections("zzz"), InvalidArgument),
    ("graph-view-hops", lambda ws, i: ws.graph_view([i["sem"]], hops=9), InvalidArgument),
]


@pytest.mark.parametrize(
    "action, error", [c[1:] for c in WRAPPER_CASES], ids=[c[0] for c in WRAPPER_CASES]
)
def test_wrapper_refused_and_nothing_written(ws, ids, action, error):
    before = snapshot(ws)
    with pytest.raises(error):
        action(ws, ids)
    assert snapshot(ws) == before


def test_messages_name_the_problem(ws, ids):
    with pytest.raises(ContentTooLarge, match=str(C.MAX_CONTENT_BYTES)):
        ws.capture("x" * (C.MAX_CONTENT_BYTES + 1))
    with pytest.raises(InvalidArgument, match="importance"):
        ws.capture("x", importance=3)
    with pytest.raises(InvalidArgument, match="kind"):
        ws.capture("x", kind="event")
    with pytest.raises(InvalidArgument, match="reserved"):
        ws.capture("x", tags=["stale:as-of"])
    with pytest.raises(InvalidArgument, match=str(C.MAX_TAG_CHARS)):
        ws.capture("x", tags=["t" * 100])
    with pytest.raises(InvalidArgument, match="UUID"):
        ws.get_entry("abc")
    with pytest.raises(NotFound, match=MISSING):
        ws.get_entry(MISSING)
    with pytest.raises(InvalidArgument, match="colour"):
        ws.capture("x", colour="red")
    with pytest.raises(KindGateViolation, match="episodic"):
        ws.link(ids["sem"], ids["ep"], "decided")
    with pytest.raises(NotFound, match="unknown method"):
        ws.call("nope", {})


def test_closed_workspace_refuses_calls(tmp_path, clock):
    workspace = Workspace(tmp_path / "closed.db", clock=clock, synchronous="NORMAL")
    workspace.capture("before closing")
    workspace.close()
    workspace.close()  # closing twice is harmless
    assert workspace.closed
    with pytest.raises(WorkspaceClosed):
        workspace.get_count()
    with pytest.raises(WorkspaceClosed):
        workspace.capture("after closing")
    reopened = Workspace(tmp_path / "closed.db", clock=clock, synchronous="NORMAL")
    assert reopened.get_count() == {"count": 1}
    reopened.close()


def _named_error_classes(base=None):
    from minisphere import errors

    base = base or errors.MiniSphereError
    found = [base]
    for sub in base.__subclasses__():
        found += _named_error_classes(sub)
    return found


@pytest.mark.parametrize(
    "cls", sorted(set(_named_error_classes()), key=lambda c: c.__name__), ids=lambda c: c.__name__
)
def test_every_named_error_survives_the_trip_between_processes(cls):
    # Ray pickles a named error raised in an actor; one that could not be rebuilt reached the
    # caller as a 500 (a refusal with a Retry-After, say, lost its class and its pause)
    import inspect
    import pickle

    parameters = list(inspect.signature(cls.__init__).parameters.values())[2:]
    required = {
        p.name: 3.0 if p.name.endswith("_s") else "value"
        for p in parameters
        if p.default is inspect.Parameter.empty
        and p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    }
    error = cls("what happened", **required)
    error.public_message = "told to tenants"
    rebuilt = pickle.loads(pickle.dumps(error))
    assert type(rebuilt) is cls and rebuilt.message == "what happened"
    assert rebuilt.code == cls.code and rebuilt.public_message == "told to tenants"
    assert vars(rebuilt) == vars(error)
