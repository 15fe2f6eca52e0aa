"""Workspace tokens over real HTTP: scopes, listing without secrets, revocation and expiry that
take effect on the very next request, a re-created id that inherits no token, whoami, and the
budget of failed authentications per client address."""

import contextlib
import os
import signal
import time
from pathlib import Path

import httpx
import pytest
import ray

from actors.in_cluster import connect_in_cluster
from minisphere.client.exchange import ServiceError
from minisphere.control.auth import token_hash
from tests.e2e.helpers import directory_of


def call(http, ws, headers, method, body=None):
    return http.post(f"/v1/w/{ws}/{method}", headers=headers, json=body or {})


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def issue(http, admin_headers, ws, **body):
    r = http.post(f"/v1/workspaces/{ws}/tokens", headers=admin_headers, json=body)
    assert r.status_code == 201, r.text
    return r.json()


def test_read_token_reads_and_cannot_write(http, admin_headers, new_workspace):
    ws, h = new_workspace()
    entry = call(http, ws, h, "capture", {"content": "visible to readers"}).json()["id"]
    reader = issue(http, admin_headers, ws, scope="read", label="dashboard")
    assert reader["scope"] == "read" and reader["label"] == "dashboard"
    r = bearer(reader["token"])
    assert call(http, ws, r, "getEntry", {"id": entry}).status_code == 200
    assert call(http, ws, r, "recall", {"query": "readers"}).json()["items"]
    for method, body in (
        ("capture", {"content": "no"}),
        ("forget", {"id": entry}),
        ("append", {"id": entry, "addition": "no"}),
    ):
        refused = call(http, ws, r, method, body)
        assert refused.status_code == 403, (method, refused.text)
        assert refused.json()["error"]["code"] == "insufficient_scope"
    assert call(http, ws, h, "getCount").json()["count"] == 1
    assert call(http, ws, h, "getEntry", {"id": entry}).json()["content"] == "visible to readers"


def test_token_listing_shows_no_secret_or_hash(http, admin_headers, new_workspace):
    ws, h = new_workspace()
    reader = issue(http, admin_headers, ws, scope="read", expiresInS=3600)
    listed = http.get(f"/v1/workspaces/{ws}/tokens", headers=admin_headers)
    assert listed.status_code == 200, listed.text
    items = listed.json()["items"]
    assert [t["scope"] for t in items] == ["write", "read"]
    assert set(items[1]) == {"tokenId", "scope", "label", "createdAt", "expiresAt", "lastUsedAt"}
    assert reader["token"] not in listed.text and h["Authorization"][7:] not in listed.text
    assert http.get(f"/v1/workspaces/{ws}/tokens", headers=h).status_code == 401


def test_revoked_token_is_refused_by_the_very_next_request(
    http, admin_headers, new_workspace, service
):
    ws, h = new_workspace()
    spare = issue(http, admin_headers, ws, scope="write")
    s = bearer(spare["token"])
    assert call(http, ws, s, "getCount").status_code == 200  # the ingress caches it now
    # revoked through the directory itself, as another ingress replica would: this replica's
    # cache still holds the token, and only the workspace actor can refuse it
    ray.get(directory_of(service).revoke_token.remote(ws, spare["tokenId"]), timeout=60)
    refused = call(http, ws, s, "getCount")
    assert refused.status_code == 401, refused.text
    assert call(http, ws, s, "capture", {"content": "never"}).status_code == 401
    assert call(http, ws, h, "getCount").json()["count"] == 0  # the other token still works
    gone = http.delete(f"/v1/workspaces/{ws}/tokens/{spare['tokenId']}", headers=admin_headers)
    assert gone.status_code == 404


def test_revoked_token_is_refused_in_the_cluster_too(http, admin_headers, new_workspace, service):
    ws, _ = new_workspace()
    spare = issue(http, admin_headers, ws, scope="write")
    agent = connect_in_cluster(ws, spare["token"], namespace=service["config"].namespace)
    try:
        assert agent.get_count() == 0
        revoked = http.delete(
            f"/v1/workspaces/{ws}/tokens/{spare['tokenId']}", headers=admin_headers
        )
        assert revoked.status_code == 200 and revoked.json() == {"revoked": spare["tokenId"]}
        try:
            agent.get_count()
        except ServiceError as exc:
            assert exc.status == 401
        else:
            raise AssertionError("a revoked token was accepted by the workspace actor")
    finally:
        agent.close()


def process_ends(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
            if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


def test_an_actor_that_cannot_take_a_revocation_is_retired_not_left_serving(
    http, admin_headers, new_workspace, service
):
    ws, h = new_workspace()
    spare = issue(http, admin_headers, ws, scope="write")
    s = bearer(spare["token"])
    assert (
        call(http, ws, s, "capture", {"content": "written before the revocation"}).status_code
        == 200
    )
    directory = directory_of(service)
    handle = ray.get(directory.activate.remote(ws), timeout=60)
    pid = ray.get(handle.ping.remote(), timeout=60)["pid"]
    os.kill(pid, signal.SIGSTOP)  # the actor hangs: it cannot be handed the new set
    try:
        ray.get(directory.revoke_token.remote(ws, spare["tokenId"]), timeout=120)
        # still hung: the call must not wait for it (nor ever be served by it)
        refused = call(http, ws, s, "getCount")
        assert refused.status_code == 401, refused.text
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    assert process_ends(pid, within_s=30), "the actor that missed the revocation still runs"
    assert call(http, ws, h, "getCount").json()["count"] == 1  # the write is still there
    fresh = ray.get(ray.get(directory.activate.remote(ws), timeout=60).ping.remote(), timeout=60)
    assert fresh["pid"] != pid


SHORT_TOKEN_S = 2
SHORT_TOKEN_ISSUES = 5  # a busy machine may answer after the token's life: issue another


def test_expired_token_is_refused_on_the_next_request(http, admin_headers, new_workspace):
    ws, h = new_workspace()
    assert call(http, ws, h, "getCount").status_code == 200  # awake: no wake inside the life
    for _ in range(SHORT_TOKEN_ISSUES):
        brief = issue(http, admin_headers, ws, scope="read", expiresInS=SHORT_TOKEN_S)
        b = bearer(brief["token"])
        alive = call(http, ws, b, "getCount")
        if time.time() * 1000 < brief["expiresAt"]:  # answered within the token's life
            break
    assert alive.status_code == 200, alive.text
    time.sleep(max(0.0, brief["expiresAt"] / 1000 - time.time()) + 0.1)
    refused = call(http, ws, b, "getCount")
    assert refused.status_code == 401 and "expired" in refused.json()["error"]["message"]


def test_recreated_workspace_id_refuses_the_old_tenants_token(http, admin_headers):
    ws = f"reborn-tokens-{time.time_ns() % 10**9}"
    first = http.post("/v1/workspaces", headers=admin_headers, json={"id": ws}).json()
    old = bearer(first["token"])
    assert call(http, ws, old, "capture", {"content": "old tenant"}).status_code == 200
    assert http.delete(f"/v1/workspaces/{ws}", headers=admin_headers).status_code == 200
    second = http.post("/v1/workspaces", headers=admin_headers, json={"id": ws}).json()
    try:
        refused = call(http, ws, old, "getCount")
        assert refused.status_code == 401, refused.text
        assert call(http, ws, bearer(second["token"]), "getCount").json()["count"] == 0
    finally:
        http.delete(f"/v1/workspaces/{ws}", headers=admin_headers)


def test_whoami_tells_each_kind_of_token(http, admin_headers, new_workspace):
    ws, h = new_workspace()
    reader = issue(http, admin_headers, ws, scope="read", label="look")
    assert http.get("/v1/whoami", headers=admin_headers).json() == {"kind": "admin"}
    mine = http.get("/v1/whoami", headers=h).json()
    assert mine["kind"] == "workspace" and mine["workspace"] == ws and mine["scope"] == "write"
    theirs = http.get("/v1/whoami", headers=bearer(reader["token"])).json()
    assert theirs == {
        "kind": "workspace",
        "workspace": ws,
        "tokenId": reader["tokenId"],
        "scope": "read",
        "label": "look",
        "expiresAt": None,
    }
    assert http.get("/v1/whoami", headers=bearer("msw_nope")).status_code == 401
    assert http.get("/v1/whoami").status_code == 401


def test_token_routes_refuse_bad_input(http, admin_headers, new_workspace):
    ws, _ = new_workspace()
    url = f"/v1/workspaces/{ws}/tokens"
    for bad in (
        {},
        {"scope": "admin"},
        {"scope": "read", "expiresInS": 0},
        {"scope": "read", "label": "x" * 201},
        {"scope": "read", "extra": 1},
    ):
        r = http.post(url, headers=admin_headers, json=bad)
        assert r.status_code == 400, (bad, r.text)
    assert (
        http.post(
            "/v1/workspaces/no-such-ws/tokens", headers=admin_headers, json={"scope": "read"}
        ).status_code
        == 404
    )
    assert http.delete(f"{url}/tok-unknown", headers=admin_headers).status_code == 404


def test_a_client_spending_its_failed_auth_budget_gets_429_while_others_do_not(
    service, new_workspace
):
    ws, h = new_workspace()
    flooder = httpx.Client(
        base_url=service["url"],
        timeout=30,
        transport=httpx.HTTPTransport(local_address="127.0.0.77"),
    )
    try:
        assert call(flooder, ws, h, "getCount").status_code == 200  # known to the ingress
        answers = [call(flooder, ws, bearer(f"msw_bad_{i}"), "getCount") for i in range(40)]
        statuses = [answer.status_code for answer in answers]
        assert statuses[0] == 401 and 429 in statuses
        # a refusal from the flood itself: one sent after it may already find the budget
        # refilled (two attempts a second) on a machine slow enough
        limited = [answer for answer in answers if answer.status_code == 429][-1]
        assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
        assert limited.json()["error"]["code"] == "rate_limited"
        assert call(flooder, ws, h, "getCount").status_code == 200  # a good token still passes
    finally:
        flooder.close()
    with httpx.Client(base_url=service["url"], timeout=30) as other:
        assert call(other, ws, bearer("msw_bad_elsewhere"), "getCount").status_code == 401


@pytest.mark.parametrize(
    "method, args",
    [
        ("snapshot", ("manual",)),
        ("restore", (None,)),
        ("restore_to_moment", ("2026-12-01T00:00:00Z",)),
        ("prune_snapshots", (1,)),
        ("export_page", ("an-export", 1, 10)),
    ],
)
def test_a_handle_to_a_workspace_actor_is_no_admin_credential(
    http, admin_headers, new_workspace, service, method, args
):
    """Code in the cluster holding the actor's handle, with the workspace's own token: the
    admin's file operations are refused, and the file is untouched."""
    ws, h = new_workspace()
    assert call(http, ws, h, "capture", {"content": "kept through the refusals"}).status_code == 200
    handle = ray.get(directory_of(service).activate.remote(ws), timeout=60)
    tenant_hash = token_hash(h["Authorization"].split(" ", 1)[1])
    reply = ray.get(handle.serve.remote(ws, method, *args, tenant_hash), timeout=60)
    assert reply.ok is False
    assert reply.error.code == "unauthenticated", reply.error
    assert call(http, ws, h, "getCount").json()["count"] == 1
