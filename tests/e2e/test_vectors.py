"""A workspace whose blueprint binds vectors embeds through the shared embedder actor."""

import ray

from actors.embedder.actor import embedder_name
from minisphere.http.handling import QUERY_AHEAD_PART


def call(http, ws, headers, method, body):
    response = http.post(f"/v1/w/{ws}/{method}", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def queries_go_ahead_once_the_ingress_knows_the_embedder(http, headers, embedder, before) -> None:
    """Once the ingress knows the workspace's embedder (from an answer; it looks the embedder up
    off its event loop) it sends each query there itself, ahead of the call: still one
    embedding per recall, never one from each side."""
    for n in range(1, 200):
        response = http.post(
            "/v1/w/vector-bound-1/recall",
            headers=headers,
            json={"query": f"parquet export question {n}", "topK": 2},
        )
        assert response.status_code == 200, response.text
        assert response.json()["items"][0]["breakdown"]["vector"]["rank"] >= 1
        assert ray.get(embedder.info.remote())["texts"] == before + n
        if QUERY_AHEAD_PART in response.headers["Server-Timing"]:
            return
    raise AssertionError("no recall used a query vector sent ahead by the ingress")


def test_vector_binding_from_the_blueprint(http, admin_headers, service):
    created = http.post(
        "/v1/workspaces",
        headers=admin_headers,
        json={
            "id": "vector-bound-1",
            "blueprint": {"bindings": {"vector": {"provider": "hash", "dimensions": 384}}},
        },
    )
    assert created.status_code == 201, created.text
    assert created.json()["workspace"]["blueprint"]["bindings"]["vector"]["provider"] == "hash"
    headers = {"Authorization": f"Bearer {created.json()['token']}"}
    try:
        capture = {"content": "The nightly export job writes parquet files to the archive bucket"}
        first = call(http, "vector-bound-1", headers, "capture", capture)
        assert first["outcome"] == "stored"
        lunch = {"content": "Lunch on Fridays is pizza in the small meeting room"}
        call(http, "vector-bound-1", headers, "capture", lunch)
        spec = {"provider": "hash", "model": "all-MiniLM-L6-v2", "dim": 384}
        embedder = ray.get_actor(embedder_name(spec), namespace=service["config"].namespace)
        before = ray.get(embedder.info.remote())["texts"]
        query = {"query": "where does the nightly export write its files", "topK": 2}
        found = call(http, "vector-bound-1", headers, "recall", query)
        assert found["items"][0]["id"] == first["id"]
        assert found["items"][0]["breakdown"]["vector"]["rank"] >= 1  # the vector arm ran
        # started as the call reached the actor, and that embedding is the one the read used
        assert ray.get(embedder.info.remote())["texts"] == before + 1
        assert before >= 2  # shared, not per actor
        queries_go_ahead_once_the_ingress_knows_the_embedder(http, headers, embedder, before + 1)
    finally:
        http.delete("/v1/workspaces/vector-bound-1", headers=admin_headers)


def test_unbound_workspace_has_no_vector_arm(http, new_workspace):
    ws, headers = new_workspace()
    call(http, ws, headers, "capture", {"content": "Backups are verified every Sunday"})
    found = call(http, ws, headers, "recall", {"query": "backups verified"})
    assert "vector" not in found["items"][0]["breakdown"]


def test_a_rebind_moves_a_serving_workspace_to_another_provider_and_survives_hibernation(
    http, admin_headers, new_workspace
):
    """Through the real service: the admin's rebind answers at once, the entries are
    re-embedded while the workspace serves, the progress is read back, and the next residency
    opens with the new provider (the blueprint names it, and the file holds it)."""
    import time

    ws, headers = new_workspace()
    for n in range(20):
        call(http, ws, headers, "capture", {"content": f"note {n}: the ferry leaves at dawn"})
    url = f"/v1/workspaces/{ws}/vector-binding"
    started = http.post(url, json={"provider": "hash", "dimensions": 32}, headers=admin_headers)
    assert started.status_code == 202, started.text
    assert started.json()["blueprint"]["provider"] == "hash"
    deadline = time.monotonic() + 60
    while True:
        state = http.get(url, headers=admin_headers).json()
        if state["rebind"] and state["rebind"]["state"] != "re-embedding":
            break
        assert time.monotonic() < deadline, state
        time.sleep(0.2)
    assert state["rebind"]["state"] == "done", state
    assert state["file"] == {"provider": "hash-32", "dim": 32, "missing": 0}
    found = call(http, ws, headers, "recall", {"query": "when does the ferry leave"})
    assert found["queryUsed"]["vector"]["provider"] == "hash-32"
    assert http.post(f"/v1/workspaces/{ws}/hibernate", headers=admin_headers).status_code == 200
    again = call(http, ws, headers, "recall", {"query": "when does the ferry leave"})
    assert again["queryUsed"]["vector"]["provider"] == "hash-32"
    assert http.get(url, headers=admin_headers).json()["file"]["missing"] == 0
