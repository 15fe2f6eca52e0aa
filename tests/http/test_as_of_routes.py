"""Reads as of a moment over HTTP, through the real app to real engine files: `asOf` on recall,
getEntry and listRecent answers what the workspace held then, and a malformed or future moment
is a 422 `invalid_argument` (the status of every invalid argument) that names it."""

from __future__ import annotations

import pytest

from minisphere.engine.clock import ManualClock, iso_utc
from tests.support.engine_gateway import answer_of, workspace_http

OLD = "The billing service deploys to region us-east-1 on Fridays"
NEW = "Billing moved: eu-west-1 is the region now"


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
def http(tmp_path, clock):
    with workspace_http(tmp_path, "notes", clock) as client:
        yield client


def call(http, method: str, **body):
    return answer_of(http, "notes", method, **body)


def test_recall_get_entry_and_list_recent_over_http_answer_as_of_a_moment(http, clock):
    old = call(http, "capture", content=OLD)["id"]
    moment = iso_utc(clock.advance(days=1))
    clock.advance(days=1)
    call(http, "update", id=old, content=OLD.replace("us-east-1", "us-west-2"))
    new = call(http, "capture", content=NEW)["id"]
    call(http, "link", src=new, dst=old, type="supersedes")

    then = call(http, "recall", query="billing service region Fridays", asOf=moment)
    assert [(i["id"], i["content"], i["supersededBy"]) for i in then["items"]] == [(old, OLD, None)]
    assert then["queryUsed"]["asOf"].startswith(moment[:-1])
    assert call(http, "getEntry", id=old, asOf=moment)["content"] == OLD
    assert [e["id"] for e in call(http, "listRecent", asOf=moment)["items"]] == [old]
    now = call(http, "recall", query="billing service region Fridays")["items"]
    assert now[0]["id"] == new


@pytest.mark.parametrize(
    ("method", "body"),
    [
        ("recall", {"query": "billing", "asOf": "last tuesday"}),
        ("listRecent", {"asOf": "2026-09-01"}),
        ("recall", {"query": "billing", "asOf": "2999-01-01T00:00:00Z"}),
        ("listRecent", {"asOf": 1788000000000}),
    ],
)
def test_a_bad_as_of_over_http_is_a_422_invalid_argument_naming_it(http, method, body):
    response = http.post(f"/v1/w/notes/{method}", json=body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_argument" and "asOf" in error["message"]


def test_get_entry_as_of_a_moment_before_the_entry_existed_is_a_404(http, clock):
    moment = iso_utc(clock.now_ms() - 1000)
    entry = call(http, "capture", content=NEW)["id"]
    response = http.post("/v1/w/notes/getEntry", json={"id": entry, "asOf": moment})
    assert response.status_code == 404, response.text
    assert response.json()["error"]["code"] == "not_found"
