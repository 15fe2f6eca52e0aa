"""Every method answers the shape its row of the method table names (`Method.answer`, a
`minisphere.wire` TypedDict): the one definition the routes and the MCP tools publish.

The answers are real ones from a real workspace file, steered into each optional part of their
shape (a cut content, left-out edge metadata, a stale entry, a blocked and a confirmed capture),
and validated with unknown keys refused: a key the engine adds, drops or renames without the
TypedDict saying so fails here, before any HTTP test runs."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from minisphere.engine import constants as C
from minisphere.engine.methods import INTERNAL_METHODS, METHODS
from minisphere.wire import answers as A


def checked(name: str, answer: object) -> dict:
    TypeAdapter(METHODS[name].answer).validate_python(answer, strict=True)
    assert isinstance(answer, dict)
    return answer


@pytest.fixture
def steered(ws, clock):
    """A workspace whose answers reach every optional part of their shapes, and the answers."""
    answers: list[tuple[str, object]] = []

    def call(name: str, body: dict | None = None) -> dict:
        answer = ws.call(name, body)
        answers.append((name, answer))
        return answer

    long = call(
        "capture",
        {
            "content": "the quarterly launch plan " + "x" * (C.LIST_CONTENT_MAX_CHARS + 50),
            "kind": "episodic",
            "volatility": "volatile",
            "source": "notes",
            "tags": ["launch"],
        },
    )
    other = call(
        "capture", {"content": "Dana owns the launch review", "kind": "episodic", "source": "a"}
    )
    call("capture", {"content": "Dana owns the launch review", "source": "a"})  # blocked
    call("capture", {"content": "Dana owns the launch review", "source": "b"})  # confirmed
    big_metadata = {"note": "m" * (C.GRAPH_VIEW_EDGE_METADATA_MAX_BYTES + 10)}
    call(
        "link", {"src": long["id"], "dst": other["id"], "type": "follows", "metadata": big_metadata}
    )
    call("append", {"id": other["id"], "addition": "and the budget"})
    call("setStatus", {"id": other["id"], "status": "canonical"})
    clock.advance(days=400)  # the volatile entry turns stale
    for name, body in [
        ("recall", {"query": "launch plan review"}),
        ("recall", {"query": "launch", "full": True}),
        ("listRecent", {}),
        ("getEntry", {"id": long["id"]}),
        ("connections", {"id": long["id"]}),
        ("graphView", {"seedIds": [long["id"], "0" * 8 + "-0000-4000-8000-" + "0" * 12]}),
        ("getTags", {}),
        ("getCount", {}),
        ("getStats", {}),
        ("getBrief", {}),
        ("runStalenessPass", {}),
        ("update", {"id": long["id"], "content": "the plan, shorter"}),
        ("unlink", {"src": long["id"], "dst": other["id"], "type": "follows"}),
        ("forget", {"id": other["id"]}),
    ]:
        call(name, body)
    return answers


def test_every_answer_a_method_gives_validates_against_the_shape_it_names(steered):
    for name, answer in steered:
        checked(name, answer)
    assert {name for name, _ in steered} == set(METHODS)


def test_the_steered_answers_reach_the_optional_parts_of_their_shapes(steered):
    """The shapes' optional keys were in the answers checked above, so their types were too."""
    by_name: dict[str, list[dict]] = {}
    for name, answer in steered:
        by_name.setdefault(name, []).append(answer)
    captures = by_name["capture"]
    assert [c["outcome"] for c in captures] == ["stored", "stored", "blocked", "blocked"]
    assert captures[3].get("confirmed") is True
    listed = by_name["listRecent"][0]["items"]
    assert any(item.get("truncated") and item.get("contentChars") for item in listed)
    graph = by_name["graphView"][0]
    assert graph["missingSeedIds"] and graph["edges"][0].get("metadataOmitted") is True
    recalled = by_name["recall"][0]
    assert recalled["revalidate"] and recalled["items"][0]["stale"]


def test_an_answer_with_a_key_its_shape_does_not_name_is_refused():
    count: A.CountAnswer = {"count": 1}
    with pytest.raises(ValidationError):
        TypeAdapter(A.CountAnswer).validate_python({**count, "extra": 1})


def test_every_method_names_an_answer_shape_pydantic_can_publish():
    for method in [*METHODS.values(), *INTERNAL_METHODS.values()]:
        schema = TypeAdapter(method.answer).json_schema(mode="serialization")
        assert schema["additionalProperties"] is False, method.name
