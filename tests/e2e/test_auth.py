"""Auth: missing, malformed, wrong and foreign tokens; admin-only routes; no actor wakes up
for a request that is not authenticated."""

import time

import pytest
import ray

from tests.e2e.helpers import workspace_actor


def call(http, ws, headers, method, body=None):
    return http.post(f"/v1/w/{ws}/{method}", json=body or {}, headers=headers)


def assert_error(response, status, code):
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": ""},
        {"Authorization": "Bearer"},
        {"Authorization": "Basic abc"},
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": "Bearer " + "x" * 600},
    ],
)
def test_workspace_routes_refuse_bad_tokens(http, new_workspace, headers):
    ws, good = new_workspace()
    for method in ("getCount", "capture", "recall", "runStalenessPass"):
        assert_error(call(http, ws, headers, method, {"content": "x"}), 401, "unauthenticated")
    assert call(http, ws, good, "getCount").json() == {"count": 0}


def test_another_workspaces_token_is_forbidden(http, new_workspace):
    a, ha = new_workspace()
    _b, hb = new_workspace()
    assert call(http, a, ha, "capture", {"content": "secret of a"}).status_code == 200
    assert_error(call(http, a, hb, "getCount"), 403, "forbidden")
    assert_error(call(http, a, hb, "capture", {"content": "b writes into a"}), 403, "forbidden")
    assert call(http, a, ha, "getCount").json() == {"count": 1}


def test_staleness_pass_needs_the_admin_token(http, new_workspace, admin_headers):
    ws, h = new_workspace()
    assert_error(call(http, ws, h, "runStalenessPass", {"limit": 5}), 403, "forbidden")
    admin = call(http, ws, admin_headers, "runStalenessPass", {"limit": 5})
    assert admin.status_code == 200, admin.text
    assert admin.json()["scanned"] >= 0


def test_admin_routes_refuse_workspace_tokens(http, new_workspace):
    ws, h = new_workspace()
    for response in (
        http.get("/v1/workspaces", headers=h),
        http.post("/v1/workspaces", headers=h, json={}),
        http.get(f"/v1/workspaces/{ws}", headers=h),
        http.delete(f"/v1/workspaces/{ws}", headers=h),
        http.get("/v1/workspaces"),
    ):
        assert_error(response, 401, "unauthenticated")
    assert call(http, ws, h, "getCount").status_code == 200


def test_admin_token_on_unknown_workspace_is_404(http, admin_headers):
    assert_error(call(http, "no-such-space", admin_headers, "getCount"), 404, "not_found")


def test_unauthenticated_requests_never_wake_an_actor(http, new_workspace, service):
    ws, h = new_workspace()
    assert call(http, ws, h, "capture", {"content": "before sleep"}).status_code == 200
    ray.kill(workspace_actor(service, ws), no_restart=True)
    deadline = time.time() + 20
    while time.time() < deadline and workspace_actor(service, ws) is not None:
        time.sleep(0.1)
    for headers in ({}, {"Authorization": "Bearer nope"}):
        for method in ("getCount", "capture"):
            assert call(http, ws, headers, method, {"content": "x"}).status_code == 401
    assert workspace_actor(service, ws) is None
    # an authenticated read re-activates it transparently, and the data is still there
    assert call(http, ws, h, "getCount").json() == {"count": 1}
    assert workspace_actor(service, ws) is not None
