"""Supersession hints over HTTP, through the real app to a real engine file bound to the hash
provider: the capture's answer names the entry it may replace, getBrief lists the open hint, and
the agent's `supersedes` link settles it."""

from __future__ import annotations

import pytest

from tests.http.standin import one
from tests.support.engine_gateway import ADMIN_TOKEN, EngineGateway, engine_api

OLD = "The billing service deploys to us-east-1 on Fridays."
NEW = "The billing service deploys to eu-west-1 on Fridays."


@pytest.fixture
def app(tmp_path):
    gateway = EngineGateway(tmp_path)
    token = gateway.create_now("notes")["token"]
    api = engine_api(gateway)
    bound = one(
        api,
        "POST",
        "/v1/workspaces/notes/vector-binding",
        json={"provider": "hash"},
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
    )
    assert bound.status_code == 202, bound.text
    yield api, {"Authorization": f"Bearer {token}"}
    gateway.close()


def call(app, method: str, **body):
    api, headers = app
    answer = one(api, "POST", f"/v1/w/notes/{method}", json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_capture_over_http_answers_its_hint_and_the_brief_lists_it_until_linked(app):
    old = call(app, "capture", content=OLD)["id"]
    answer = call(app, "capture", content=NEW)
    assert answer["outcome"] == "stored"
    hint = answer["supersessionHint"]
    assert (hint["id"], hint["before"], hint["after"]) == (old, ["us-east-1"], ["eu-west-1"])
    listed = call(app, "getBrief")["revalidate"]
    assert [(h["entry"]["id"], h["candidate"]["id"]) for h in listed] == [(answer["id"], old)]
    assert "supersession-candidate" in listed[0]["entry"]["tags"]
    call(app, "link", src=answer["id"], dst=old, type="supersedes")
    assert call(app, "getBrief")["revalidate"] == []
    ranked = call(app, "recall", query="billing service deploys Fridays")["items"]
    assert [i["id"] for i in ranked][:2] == [answer["id"], old]
