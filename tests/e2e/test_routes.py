"""Every route, end to end over HTTP through Ray Serve."""

from minisphere.engine.methods import METHODS


def call(http, ws, headers, method, body=None):
    return http.post(f"/v1/w/{ws}/{method}", json=body if body is not None else {}, headers=headers)


def test_health_contracts_docs(http):
    assert http.get("/healthz").json() == {"status": "ok"}
    contracts = http.get("/v1/contracts").json()
    assert isinstance(contracts["contracts"], list)
    assert {m["name"] for m in contracts["methods"]} == set(METHODS)
    assert http.get("/docs").status_code == 200
    paths = http.get("/openapi.json").json()["paths"]
    for name in METHODS:
        assert f"/v1/w/{{workspace}}/{name}" in paths
    assert "/v1/workspaces" in paths and "/v1/workspaces/{workspace_id}" in paths


def test_admin_workspace_lifecycle(http, admin_headers, service):
    created = http.post(
        "/v1/workspaces",
        headers=admin_headers,
        json={
            "id": "life-cycle-1",
            "label": "demo",
            "blueprint": {
                "name": "nightly",
                "bindings": {"scheduledTasks": {"cron": "0 4 * * *", "limit": 50}},
            },
        },
    )
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["token"].startswith("msw_")
    record = body["workspace"]
    assert record["id"] == "life-cycle-1" and record["label"] == "demo"
    assert record["blueprint"]["bindings"]["scheduledTasks"] == {"cron": "0 4 * * *", "limit": 50}
    assert record["blueprint"]["bindings"]["vector"] is None
    pinned = http.get("/v1/contracts").json()["contracts"]
    if pinned:  # born with the active contract text: name@version+sha256
        active = [c for c in pinned if c.get("role", "text") == "text" and c.get("active", True)]
        assert record["contracts"][0]["sha256"] == active[0]["sha256"]
        assert record["contracts"][0]["reference"] == (
            f"{active[0]['name']}@{active[0]['version']}+sha256:{active[0]['sha256']}"
        )
    assert (service["data_dir"] / "workspaces" / "life-cycle-1").is_dir()
    # the token is never shown again
    shown = http.get("/v1/workspaces/life-cycle-1", headers=admin_headers)
    assert shown.status_code == 200 and "token" not in shown.text
    assert shown.json()["id"] == "life-cycle-1"
    listed = http.get("/v1/workspaces", headers=admin_headers).json()["items"]
    assert "life-cycle-1" in [w["id"] for w in listed]
    again = http.post("/v1/workspaces", headers=admin_headers, json={"id": "life-cycle-1"})
    assert again.status_code == 409 and again.json()["error"]["code"] == "workspace_exists"
    token_headers = {"Authorization": f"Bearer {body['token']}"}
    assert (
        call(http, "life-cycle-1", token_headers, "capture", {"content": "x1"}).status_code == 200
    )
    deleted = http.delete("/v1/workspaces/life-cycle-1", headers=admin_headers)
    assert deleted.status_code == 200
    assert deleted.json() == {"deleted": "life-cycle-1", "snapshotsDeleted": True}
    assert not (service["data_dir"] / "workspaces" / "life-cycle-1").exists()
    assert http.get("/v1/workspaces/life-cycle-1", headers=admin_headers).status_code == 404
    assert http.delete("/v1/workspaces/life-cycle-1", headers=admin_headers).status_code == 404
    gone = call(http, "life-cycle-1", token_headers, "getCount")
    assert gone.status_code in (401, 404), gone.text
    # the id can be used again, with a fresh file
    reborn = http.post("/v1/workspaces", headers=admin_headers, json={"id": "life-cycle-1"})
    assert reborn.status_code == 201
    fresh = {"Authorization": f"Bearer {reborn.json()['token']}"}
    assert call(http, "life-cycle-1", fresh, "getCount").json() == {"count": 0}
    http.delete("/v1/workspaces/life-cycle-1", headers=admin_headers)


def test_generated_ids_and_default_blueprint(http, admin_headers):
    created = http.post("/v1/workspaces", headers=admin_headers)
    assert created.status_code == 201, created.text
    record = created.json()["workspace"]
    assert record["id"].startswith("ws-")
    assert record["blueprint"]["bindings"]["scheduledTasks"]["limit"] == 1000
    http.delete(f"/v1/workspaces/{record['id']}", headers=admin_headers)


ENTRY_FIELDS = (
    "id",
    "content",
    "source",
    "createdAt",
    "updatedAt",
    "recallCount",
    "importance",
    "claimTag",
    "evidenceRef",
    "status",
    "kind",
    "volatility",
    "tags",
)


def captures_and_edits(c) -> tuple[str, str]:
    """Two entries captured (a repeat blocked), then appended, updated and set to draft."""
    first = c(
        "capture",
        {
            "content": "Alice decided to use SQLite",
            "tags": ["db"],
            "kind": "episodic",
            "importance": 0.5,
            "claimTag": "VERIFIED",
        },
    )
    assert first.status_code == 200, first.text
    assert first.json()["outcome"] == "stored"
    a = first.json()["id"]
    assert c("capture", {"content": "alice decided to use sqlite"}).json() == {
        "outcome": "blocked",
        "matchId": a,
    }
    b = c("capture", {"content": "SQLite has FTS5", "kind": "episodic"}).json()["id"]
    entry = c("getEntry", {"id": a}).json()
    assert set(ENTRY_FIELDS) <= set(entry)
    assert entry["tags"] == ["db"] and entry["claimTag"] == "VERIFIED"
    appended = c("append", {"id": a, "addition": "because it is embedded"})
    assert appended.status_code == 200 and "embedded" in appended.json()["content"]
    assert c("update", {"id": b, "content": "SQLite ships FTS5"}).json()["content"] == (
        "SQLite ships FTS5"
    )
    assert c("setStatus", {"id": b, "status": "draft"}).json()["status"] == "draft"
    return a, b


def links_and_listings(c, a: str, b: str) -> None:
    linked = c("link", {"src": a, "dst": b, "type": "follows", "weight": 0.5})
    assert linked.status_code == 200, linked.text
    assert linked.json()["created"] is True
    conns = c("connections", {"id": a}).json()
    assert conns["id"] == a and len(conns["items"]) == 1
    graph = c("graphView", {"seedIds": [a], "hops": 1})
    assert graph.status_code == 200 and len(graph.json()["nodes"]) == 2
    assert c("unlink", {"src": a, "dst": b, "type": "follows"}).status_code == 200
    assert c("connections", {"id": a}).json()["items"] == []
    assert [e["id"] for e in c("listRecent", {"n": 5}).json()["items"]] == [b, a]
    assert c("listRecent", {"tag": "db"}).json()["items"][0]["id"] == a
    assert {"tag": "db", "count": 1} in c("getTags").json()["tags"]
    assert c("getCount").json() == {"count": 2}
    assert c("getStats").status_code == 200
    assert c("getBrief").status_code == 200


def recall_counted(c, a: str) -> None:
    recall = c("recall", {"query": "sqlite", "topK": 5})
    assert recall.status_code == 200, recall.text
    body = recall.json()
    assert "items" in body and "queryUsed" in body
    assert a in [item["id"] for item in body["items"]]
    for item in body["items"]:
        assert {"id", "content", "score", "breakdown"} <= set(item)
    # recall counts are bumped by a follow-up write after the answer (not awaited)
    for _ in range(50):
        if c("getEntry", {"id": a}).json()["recallCount"] >= 1:
            break
    else:
        raise AssertionError("recall count was never bumped")


def test_every_contract_method(http, new_workspace, admin_headers):
    ws, h = new_workspace()

    def c(method, body=None):
        return call(http, ws, h, method, body)

    a, b = captures_and_edits(c)
    links_and_listings(c, a, b)
    recall_counted(c, a)
    stale = call(http, ws, admin_headers, "runStalenessPass", {"limit": 10})
    assert stale.status_code == 200, stale.text
    assert stale.json()["remaining"] == 0
    assert c("forget", {"id": b}).json() == {"forgotten": True, "id": b}
    assert c("getEntry", {"id": b}).status_code == 404
    assert c("getCount").json() == {"count": 1}


def test_timings_are_exposed(http, new_workspace):
    ws, h = new_workspace()
    response = call(http, ws, h, "capture", {"content": "timed"})
    timing = response.headers["Server-Timing"]
    for part in ("queue;dur=", "engine;dur=", "actor;dur=", "ingress;dur="):
        assert part in timing
    assert int(response.headers["X-Batch-Size"]) >= 1


def test_a_woken_call_shows_its_wait_for_the_actor_and_a_warm_one_does_not(
    http, admin_headers, new_workspace
):
    ws, h = new_workspace()
    assert call(http, ws, h, "getCount").status_code == 200
    assert http.post(f"/v1/workspaces/{ws}/hibernate", headers=admin_headers).status_code == 200
    woken = call(http, ws, h, "getCount")
    assert woken.status_code == 200
    assert "activate;dur=" in woken.headers["Server-Timing"]
    assert "activate;dur=" not in call(http, ws, h, "getCount").headers["Server-Timing"]


def test_a_call_whose_token_check_asked_the_directory_shows_it_and_a_cached_one_does_not(
    http, new_workspace
):
    ws, h = new_workspace()
    first = call(http, ws, h, "getCount")
    assert first.status_code == 200 and "auth;dur=" in first.headers["Server-Timing"]
    later = [call(http, ws, h, "getCount").headers["Server-Timing"] for _ in range(5)]
    assert any("auth;dur=" not in timing for timing in later)  # from this replica's cache
