"""The operator's answers about stored states and workspaces, as the routes send them over real
engine files, validate against the wire's `TypedDict`s the gateway protocol names (with
pydantic, unknown keys refused but where the manifest allows them): a field the durability
layer adds, drops or changes the type of fails here, not in a caller."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter

from minisphere.http.service_responses import Hibernated
from minisphere.wire.records import CreatedWorkspace, Deleted, TokenRevoked, WorkspaceDetail
from minisphere.wire.stored_states import (
    Pruned,
    Restored,
    SnapshotManifest,
    VectorBindingState,
)
from tests.http.standin import one
from tests.support.engine_gateway import ADMIN_TOKEN, EngineGateway, engine_api

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
BASE = "/v1/workspaces/notes"


@pytest.fixture
def api(tmp_path):
    gateway = EngineGateway(tmp_path)
    gateway.create_now("notes")
    gateway.workspace("notes").capture("the lighthouse keeper logs the tide at dawn")
    yield engine_api(gateway)
    gateway.close()


def answer(api, method: str, path: str, shape: object, status: int = 200, **options):
    response = one(api, method, path, headers=ADMIN, **options)
    assert response.status_code == status, response.text
    return TypeAdapter(shape).validate_python(response.json(), strict=True)


def test_the_snapshot_and_restore_answers_have_the_shapes_the_gateway_names(api):
    taken = answer(api, "POST", f"{BASE}/snapshot", SnapshotManifest)
    assert taken["entryCount"] == 1 and taken["position"] >= 1
    listed = answer(api, "GET", f"{BASE}/snapshots", dict[str, list[SnapshotManifest]])
    assert [item["version"] for item in listed["items"]] == [taken["version"]]
    restored = answer(api, "POST", f"{BASE}/restore", Restored, json={"version": taken["version"]})
    assert restored["version"] == taken["version"]
    pruned = answer(api, "POST", f"{BASE}/snapshots/prune", Pruned, json={"keep": 1})
    assert pruned["kept"] and pruned["snapshot"] is not None
    assert answer(api, "POST", f"{BASE}/hibernate", Hibernated)["workspace"] == "notes"


def test_the_vector_binding_answers_have_the_shape_the_gateway_names(api):
    spec = {"provider": "hash", "dimensions": 16}
    rebound = answer(api, "POST", f"{BASE}/vector-binding", VectorBindingState, 202, json=spec)
    assert rebound["rebind"] is not None and rebound["rebind"]["state"] == "done"
    state = answer(api, "GET", f"{BASE}/vector-binding", VectorBindingState)
    assert state["file"]["missing"] == 0


def test_the_workspace_and_token_answers_have_the_shapes_the_gateway_names(api):
    created = answer(api, "POST", "/v1/workspaces", CreatedWorkspace, 201, json={"id": "other"})
    assert answer(api, "GET", "/v1/workspaces/other", WorkspaceDetail)["id"] == "other"
    revoked = answer(
        api, "DELETE", f"/v1/workspaces/other/tokens/{created['tokenId']}", TokenRevoked
    )
    assert revoked == {"revoked": created["tokenId"]}
    assert answer(api, "DELETE", "/v1/workspaces/other", Deleted)["deleted"] == "other"
