"""The adversarial suite over real HTTP through Serve: every workspace route refuses every bad
credential (none, malformed, another workspace's, revoked, expired, a read token writing) with
401/403, and nothing changes in either workspace (both full exports are identical before and
after). Each route's attempts come from their own loopback address, so the budget of failed
authentications (tested in test_tokens.py) does not turn the refusals into 429s."""

import itertools
import time

import httpx
import pytest

from minisphere.engine.methods import METHODS

MALFORMED = [
    "Bearer",
    "Bearer  msw_double_space",
    "Basic dXNlcjpwYXNz",
    "Token msw_x",
    "bearer msw_" + "x" * 600,
    "Bearer msw_ünïcode",
]
SAMPLE_ID = "123e4567-e89b-42d3-a456-426614174000"
SAMPLE_BODIES = {
    "capture": {"content": "an intruder's text"},
    "recall": {"query": "anything"},
    "getEntry": {"id": SAMPLE_ID},
    "append": {"id": SAMPLE_ID, "addition": "x"},
    "update": {"id": SAMPLE_ID, "content": "x"},
    "setStatus": {"id": SAMPLE_ID, "status": "deprecated"},
    "forget": {"id": SAMPLE_ID},
    "link": {"src": SAMPLE_ID, "dst": SAMPLE_ID, "type": "follows"},
    "unlink": {"src": SAMPLE_ID, "dst": SAMPLE_ID, "type": "follows"},
    "connections": {"id": SAMPLE_ID},
    "graphView": {"seedIds": [SAMPLE_ID]},
    "runStalenessPass": {"limit": 10},
}
_addresses = (f"127.0.{a}.{b}" for a, b in itertools.product(range(10, 250), range(2, 250)))


def dump(http, admin_headers, ws) -> list[str]:
    """Every entry, revision, tag and edge of the workspace (its export without the header,
    whose export time changes)."""
    r = http.get(f"/v1/workspaces/{ws}/export", headers=admin_headers)
    assert r.status_code == 200, r.text
    return r.text.splitlines()[1:]


@pytest.fixture(scope="module")
def tenants(http, admin_headers):
    """Two seeded workspaces and every kind of credential that must be refused on the first."""
    made = {}
    for name in ("adv-target", "adv-other"):
        created = http.post("/v1/workspaces", headers=admin_headers, json={"id": name})
        assert created.status_code == 201, created.text
        made[name] = created.json()
        headers = {"Authorization": f"Bearer {made[name]['token']}"}
        first = http.post(
            f"/v1/w/{name}/capture",
            headers=headers,
            json={"content": f"{name}'s private fact", "tags": ["p"]},
        ).json()["id"]
        second = http.post(
            f"/v1/w/{name}/capture", headers=headers, json={"content": f"{name}'s second fact"}
        ).json()["id"]
        http.post(
            f"/v1/w/{name}/link",
            headers=headers,
            json={"src": first, "dst": second, "type": "relates_to"},
        )
    target = "adv-target"

    def issue(**body):
        r = http.post(f"/v1/workspaces/{target}/tokens", headers=admin_headers, json=body)
        assert r.status_code == 201, r.text
        return r.json()

    revoked = issue(scope="write")
    assert (
        http.delete(
            f"/v1/workspaces/{target}/tokens/{revoked['tokenId']}", headers=admin_headers
        ).status_code
        == 200
    )
    expired = issue(scope="write", expiresInS=1)
    reader = issue(scope="read")
    time.sleep(max(0.0, expired["expiresAt"] / 1000 - time.time()) + 0.1)
    yield {
        "target": target,
        "other": "adv-other",
        "reader": reader["token"],
        "credentials": {
            "another workspace": made["adv-other"]["token"],
            "revoked": revoked["token"],
            "expired": expired["token"],
        },
    }
    for name in made:
        http.delete(f"/v1/workspaces/{name}", headers=admin_headers)


def workspace_routes(ws):
    """(method, path, body) of every route a workspace token may reach."""
    routes = [("POST", f"/v1/w/{ws}/{name}", SAMPLE_BODIES.get(name, {})) for name in METHODS]
    routes.append(("GET", f"/v1/workspaces/{ws}/snapshots", None))
    return routes


def admin_routes(ws):
    """Routes only the admin token may use: a workspace token is refused there too."""
    item = f"/v1/workspaces/{ws}"
    return [
        ("GET", item, None),
        ("DELETE", item, None),
        ("POST", f"{item}/snapshot", None),
        ("POST", f"{item}/restore", {"version": "20260101T000000000Z-000001"}),
        ("POST", f"{item}/snapshots/prune", {"keep": 1}),
        ("POST", f"{item}/hibernate", None),
        ("GET", f"{item}/export", None),
        ("POST", f"{item}/import?key=k1&final=true", None),
        ("GET", f"{item}/tokens", None),
        ("POST", f"{item}/tokens", {"scope": "write"}),
        ("DELETE", f"{item}/tokens/tok-0000000000000000", None),
        ("GET", "/v1/workspaces", None),
        ("POST", "/v1/workspaces", {"id": "adv-intruder"}),
        ("GET", "/v1/maintenance/runs", None),
    ]


def send(client, method, path, body, authorization):
    # bytes: a header value outside ASCII still goes on the wire (latin-1), as a raw client
    # could send it
    headers = {} if authorization is None else {"Authorization": authorization.encode("latin-1")}
    if body is None:
        return client.request(method, path, headers=headers)
    return client.request(method, path, headers=headers, json=body)


def test_every_route_refuses_every_bad_credential_and_changes_nothing(
    service, http, admin_headers, tenants
):
    target, other = tenants["target"], tenants["other"]
    before = {ws: dump(http, admin_headers, ws) for ws in (target, other)}
    refusals, wrong = 0, []
    for method, path, body in workspace_routes(target) + admin_routes(target):
        attempts = [("no token", None)] + [(f"malformed {m[:12]!r}", m) for m in MALFORMED]
        attempts += [(kind, f"Bearer {token}") for kind, token in tenants["credentials"].items()]
        admin_only = not path.startswith(f"/v1/w/{target}/") and not path.endswith("/snapshots")
        name = path.rsplit("/", 1)[-1]
        is_write = name in METHODS and METHODS[name].access != "read"
        if admin_only or is_write:
            attempts.append(("read token", f"Bearer {tenants['reader']}"))
        transport = httpx.HTTPTransport(local_address=next(_addresses))
        with httpx.Client(base_url=service["url"], timeout=30, transport=transport) as client:
            for kind, authorization in attempts:
                r = send(client, method, path, body, authorization)
                refusals += 1
                if r.status_code not in (401, 403) or set(r.json().get("error", {})) != {
                    "code",
                    "message",
                }:
                    wrong.append((method, path, kind, r.status_code, r.text[:120]))
    assert wrong == []
    assert refusals > 200
    after = {ws: dump(http, admin_headers, ws) for ws in (target, other)}
    assert after == before
    assert "adv-intruder" not in [
        w["id"] for w in http.get("/v1/workspaces", headers=admin_headers).json()["items"]
    ]


def test_the_other_workspaces_token_is_forbidden_not_just_unknown(http, tenants):
    theirs = tenants["credentials"]["another workspace"]
    r = http.post(
        f"/v1/w/{tenants['target']}/getCount",
        json={},
        headers={"Authorization": f"Bearer {theirs}"},
    )
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
