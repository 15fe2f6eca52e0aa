"""Supersession over HTTP, through the real app to real engine files: recall puts the
replacement first and names it, getEntry and connections show the chain, and a link that would
close a cycle is a 409 `supersession_cycle` that stores nothing."""

from __future__ import annotations

import pytest

from tests.support.engine_gateway import answer_of, workspace_http

OLD = "The billing service deploys to region us-east-1 on Fridays"
NEW = "Billing moved: eu-west-1 is the region now"


@pytest.fixture
def http(tmp_path):
    with workspace_http(tmp_path, "notes") as client:
        yield client


def call(http, method: str, **body):
    return answer_of(http, "notes", method, **body)


def test_recall_over_http_answers_the_replacement_first_and_names_it(http):
    old = call(http, "capture", content=OLD)["id"]
    new = call(http, "capture", content=NEW)["id"]
    call(http, "link", src=new, dst=old, type="supersedes")
    items = call(http, "recall", query="billing service deploys region Fridays")["items"]
    assert [i["id"] for i in items][:2] == [new, old]
    assert items[1]["supersededBy"] == new and items[1]["breakdown"]["rerank"]["superseded"] < 1
    assert call(http, "getEntry", id=old)["supersession"]["chain"] == [old, new]
    assert call(http, "connections", id=new)["supersession"]["supersedes"] == [old]


def test_a_supersedes_cycle_over_http_is_a_409_and_stores_no_edge(http):
    a = call(http, "capture", content="deploy rule one")["id"]
    b = call(http, "capture", content="deploy rule two")["id"]
    call(http, "link", src=b, dst=a, type="supersedes")
    response = http.post("/v1/w/notes/link", json={"src": a, "dst": b, "type": "supersedes"})
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["code"] == "supersession_cycle" and b in error["message"]
    assert call(http, "getEntry", id=a)["edgeCount"] == 1
