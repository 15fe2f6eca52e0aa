"""The admin's rebind of a workspace to another embedding provider, over HTTP (the in-process
engine gateway): 202 with the binding the blueprint now names, the file's state and the rebind's
progress; a bad binding is a 4xx JSON error that changes neither the blueprint nor the file; a
workspace's own token may not rebind it."""

from __future__ import annotations

import pytest

from tests.http.standin import one
from tests.support.engine_gateway import ADMIN_TOKEN, EngineGateway, engine_api

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
URL = "/v1/workspaces/notes/vector-binding"


@pytest.fixture
def app(tmp_path):
    gateway = EngineGateway(tmp_path)
    token = gateway.create_now("notes")["token"]
    for n in range(12):
        gateway.workspace("notes").capture(f"note {n} about the lighthouse keeper")
    yield engine_api(gateway), gateway, {"Authorization": f"Bearer {token}"}
    gateway.close()


def test_a_rebind_answers_202_and_leaves_every_entry_embedded_by_the_new_provider(app):
    api, gateway, _tenant = app
    answer = one(api, "POST", URL, json={"provider": "hash", "dimensions": 32}, headers=ADMIN)
    assert answer.status_code == 202, answer.text
    body = answer.json()
    assert body["blueprint"]["provider"] == "hash" and body["blueprint"]["dimensions"] == 32
    assert body["rebind"]["state"] == "done" and body["rebind"]["embedded"] == 12
    state = one(api, "GET", URL, headers=ADMIN).json()
    assert state["file"] == {"provider": "hash-32", "dim": 32, "missing": 0}
    assert gateway.control.get("notes")["blueprint"]["bindings"]["vector"]["dimensions"] == 32


@pytest.mark.parametrize(
    "body",
    [
        {"provider": "word2vec"},
        {"provider": "hash", "dimensions": 0},
        {"provider": "hash", "colour": "blue"},
        ["hash"],
    ],
)
def test_a_bad_binding_is_refused_and_changes_nothing(app, body):
    api, gateway, _tenant = app
    before = gateway.control.get("notes")["blueprint"]
    answer = one(api, "POST", URL, json=body, headers=ADMIN)
    assert 400 <= answer.status_code < 500, answer.text
    assert set(answer.json()) == {"error"} and answer.json()["error"]["code"]
    assert gateway.control.get("notes")["blueprint"] == before
    assert gateway.workspace("notes").vectors is None


def test_a_workspace_token_cannot_rebind_its_workspace(app):
    api, gateway, tenant = app
    answer = one(api, "POST", URL, json={"provider": "hash"}, headers=tenant)
    assert answer.status_code in (401, 403), answer.text
    assert gateway.workspace("notes").vectors is None
