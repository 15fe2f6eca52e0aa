"""`/openapi.json` describes answers, not only requests: real answers of every route, errors
included, validate against the schema the service publishes for them."""

from __future__ import annotations

import json

import jsonschema
import pytest

from minisphere.engine.methods import METHODS

NDJSON = "application/x-ndjson"


class OpenApi:
    """The published document, and a check of one real answer against it."""

    def __init__(self, document: dict):
        self.document = document
        self.checked: set[tuple[str, str]] = set()
        self.statuses: set[int] = set()

    def operations(self) -> set[tuple[str, str]]:
        return {
            (verb.upper(), path) for path, item in self.document["paths"].items() for verb in item
        }

    def check(self, verb: str, path: str, response) -> dict | list | str:
        operation = self.document["paths"][path][verb.lower()]
        documented = operation["responses"].get(str(response.status_code))
        assert documented is not None, (
            f"{verb} {path} answered {response.status_code}, which its OpenAPI entry does not "
            f"list ({sorted(operation['responses'])}): {response.text[:300]}"
        )
        media = response.headers["content-type"].split(";")[0]
        schema = documented["content"][media]["schema"]
        body = response.text if media == NDJSON else response.json()
        validator = jsonschema.Draft202012Validator(
            {**schema, "components": self.document["components"]}
        )
        problems = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
        assert not problems, f"{verb} {path} {response.status_code}: " + "; ".join(
            f"{list(p.absolute_path)}: {p.message}" for p in problems[:5]
        )
        self.checked.add((verb.upper(), path))
        self.statuses.add(response.status_code)
        return body


@pytest.fixture
def openapi(http):
    return OpenApi(http.get("/openapi.json").json())


def workspace_call(http, openapi, ws, headers, method, body=None, status=200):
    response = http.post(f"/v1/w/{ws}/{method}", json=body or {}, headers=headers)
    assert response.status_code == status, response.text
    return openapi.check("POST", f"/v1/w/{{workspace}}/{method}", response)


class Admin:
    """Admin calls, each answer checked against the route's published schema."""

    def __init__(self, http, headers: dict, openapi: OpenApi):
        self.http, self.headers, self.openapi = http, headers, openapi

    def __call__(self, verb, url, path, status=200, headers=None, **kw):
        response = self.http.request(verb, url, headers={**self.headers, **(headers or {})}, **kw)
        assert response.status_code == status, response.text
        return self.openapi.check(verb, path, response)


def every_workspace_method(call, http, openapi, ws, admin_headers) -> None:
    a = call(
        "capture",
        {
            "content": "The deploy pipeline runs on Fridays",
            "tags": ["ops"],
            "kind": "episodic",
            "claimTag": "VERIFIED",
        },
    )["id"]
    b = call("capture", {"content": "Rollbacks take ten minutes", "kind": "episodic"})["id"]
    assert (
        call("capture", {"content": "the deploy pipeline runs on fridays"})["outcome"] == "blocked"
    )
    call("append", {"id": b, "addition": "on a good day"})
    call("update", {"id": a, "content": "The deploy pipeline runs on Fridays at noon"})
    call("setStatus", {"id": b, "status": "draft"})
    call("link", {"src": a, "dst": b, "type": "follows", "metadata": {"why": "order"}})
    call("link", {"src": a, "dst": b, "type": "relates_to", "weight": 0.5})
    call("getEntry", {"id": a})
    call("listRecent", {"n": 5})
    call("connections", {"id": a})
    call("graphView", {"seedIds": [a, "123e4567-e89b-42d3-a456-426614174000"], "hops": 2})
    for method in ("getTags", "getCount", "getStats", "getBrief"):
        call(method)
    found = call("recall", {"query": "when does the deploy pipeline run", "topK": 5})
    assert any(item["breakdown"]["keyword"] is not None for item in found["items"])
    call("recall", {"query": "what happened yesterday"})
    call("unlink", {"src": b, "dst": a, "type": "relates_to"})
    call("getEntry", {"id": "123e4567-e89b-42d3-a456-426614174000"}, status=404)
    call("capture", {"content": ""}, status=422)
    workspace_call(http, openapi, ws, admin_headers, "runStalenessPass", {"limit": 10})
    call("forget", {"id": b})
    unauthorized = http.post(
        f"/v1/w/{ws}/getCount", json={}, headers={"Authorization": "Bearer wrong-token-value"}
    )
    assert unauthorized.status_code == 401
    openapi.check("POST", "/v1/w/{workspace}/getCount", unauthorized)


def snapshots_and_restores(admin: Admin, item: str) -> None:
    manifest = admin("POST", f"{item}/snapshot", "/v1/workspaces/{workspace_id}/snapshot")
    admin("GET", f"{item}/snapshots", "/v1/workspaces/{workspace_id}/snapshots")
    restore = "/v1/workspaces/{workspace_id}/restore"
    admin("POST", f"{item}/restore", restore, json={"version": manifest["version"]})
    admin("POST", f"{item}/restore", restore, 400, json={"version": "not-a-version"})
    moments = "/v1/workspaces/{workspace_id}/restore-to-moment"
    # a moment before the replica's history, then a day that does not exist
    for status, moment in ((404, "2001-01-01T00:00:00Z"), (400, "2001-02-30T00:00:00Z")):
        admin("POST", f"{item}/restore-to-moment", moments, status, json={"timestamp": moment})
    prune = "/v1/workspaces/{workspace_id}/snapshots/prune"
    admin("POST", f"{item}/snapshots/prune", prune, json={"keep": 2})


def bindings_and_tokens(admin: Admin, http, openapi: OpenApi, item: str) -> None:
    binding = "/v1/workspaces/{workspace_id}/vector-binding"
    admin(
        "POST", f"{item}/vector-binding", binding, 202, json={"provider": "hash", "dimensions": 32}
    )
    admin("GET", f"{item}/vector-binding", binding)
    admin("POST", f"{item}/vector-binding", binding, 400, json={"provider": "word2vec"})
    tokens = "/v1/workspaces/{workspace_id}/tokens"
    issued = admin(
        "POST",
        f"{item}/tokens",
        tokens,
        201,
        json={"scope": "read", "label": "schema check", "expiresInS": 600},
    )
    whoami = http.get("/v1/whoami", headers={"Authorization": f"Bearer {issued['token']}"})
    openapi.check("GET", "/v1/whoami", whoami)
    admin("GET", f"{item}/tokens", tokens)
    admin("DELETE", f"{item}/tokens/{issued['tokenId']}", tokens + "/{token_id}")


def hibernate_export_import(admin: Admin, item: str) -> None:
    hibernated = admin("POST", f"{item}/hibernate", "/v1/workspaces/{workspace_id}/hibernate")
    assert hibernated["hibernated"] is True
    assert admin("GET", item, "/v1/workspaces/{workspace_id}")["resident"] is False
    exported = admin("GET", f"{item}/export", "/v1/workspaces/{workspace_id}/export")
    lines = exported.splitlines()
    assert all(isinstance(json.loads(line), dict) for line in lines)
    report = admin(
        "POST",
        f"{item}/import?key=openapi1&final=true",
        "/v1/workspaces/{workspace_id}/import",
        content="\n".join(lines).encode(),
        headers={"Content-Type": NDJSON},
    )
    assert report["complete"] is True


def test_every_published_route_answers_what_its_schema_says(http, admin_headers, openapi, service):
    admin = Admin(http, admin_headers, openapi)
    openapi.check("GET", "/healthz", http.get("/healthz"))
    openapi.check("GET", "/v1/contracts", http.get("/v1/contracts"))
    ws = "openapi-answers"
    created = admin(
        "POST", "/v1/workspaces", "/v1/workspaces", 201, json={"id": ws, "label": "schema check"}
    )
    headers = {"Authorization": f"Bearer {created['token']}"}
    item = f"/v1/workspaces/{ws}"
    try:

        def call(method, body=None, status=200):
            return workspace_call(http, openapi, ws, headers, method, body, status)

        every_workspace_method(call, http, openapi, ws, admin_headers)
        admin("GET", "/v1/workspaces", "/v1/workspaces")
        admin("GET", item, "/v1/workspaces/{workspace_id}")
        admin("GET", "/v1/workspaces/no-such-one", "/v1/workspaces/{workspace_id}", 404)
        snapshots_and_restores(admin, item)
        admin("GET", f"/v1/maintenance/runs?workspace={ws}", "/v1/maintenance/runs")
        bindings_and_tokens(admin, http, openapi, item)
        hibernate_export_import(admin, item)
    finally:
        admin("DELETE", item, "/v1/workspaces/{workspace_id}")
    assert openapi.operations() - openapi.checked == set(), "routes answered by no test"
    assert {200, 201, 400, 401, 404, 422} <= openapi.statuses


def test_vector_bound_answers_match_the_schema(http, admin_headers, openapi):
    """A bound workspace adds fields (semantic dedup, auto-links, the vector arm); they are
    published too."""
    created = http.post(
        "/v1/workspaces",
        headers=admin_headers,
        json={
            "id": "openapi-vectors",
            "blueprint": {"bindings": {"vector": {"provider": "hash", "dimensions": 64}}},
        },
    )
    assert created.status_code == 201, created.text
    headers = {"Authorization": f"Bearer {created.json()['token']}"}
    try:

        def call(method, body):
            return workspace_call(http, openapi, "openapi-vectors", headers, method, body)

        call("capture", {"content": "The nightly export job writes parquet files to S3"})
        second = call("capture", {"content": "The nightly export job writes parquet files to GCS"})
        assert second["outcome"] in ("stored", "blocked")
        found = call("recall", {"query": "nightly export parquet"})
        assert found["queryUsed"]["vector"]["arm"] == "on"
        assert found["items"][0]["breakdown"]["vector"] is not None
    finally:
        http.delete("/v1/workspaces/openapi-vectors", headers=admin_headers)


def test_openapi_lists_every_contract_method_with_an_answer_schema(openapi):
    for name in METHODS:
        responses = openapi.document["paths"][f"/v1/w/{{workspace}}/{name}"]["post"]["responses"]
        schema = responses["200"]["content"]["application/json"]["schema"]
        assert schema.get("$ref", "").startswith("#/components/schemas/"), name
