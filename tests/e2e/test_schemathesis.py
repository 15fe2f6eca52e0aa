"""Schemathesis over the live OpenAPI document of the running service: every operation, with
its path parameters pinned to a real workspace (so requests reach the handlers, not a 404) and
each case sent once with the admin token and once with the workspace's own token. No answer
may be a 5xx, and every 4xx must be the JSON error body `{"error": {"code", "message"}}`.
The counts are printed (requests sent, 5xx seen) and checked in the last test."""
from __future__ import annotations

import json

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from minisphere.engine.methods import METHODS

PINNED = "fuzz-target"
GONE = "fuzz-never-created"            # destructive routes aim here: they reach the handler
EXAMPLES_PER_OPERATION = 25
tally = {"requests": 0, "5xx": [], "bad 4xx": [], "operations": set()}


@schemathesis.serializer("application/x-ndjson")
def ndjson_lines(ctx, value) -> bytes:
    """The import route takes JSON lines: whatever the fuzzer generated, one value per line (a
    list becomes several lines), so the route's own line parser is what gets exercised."""
    values = value if isinstance(value, list) else [value]
    return "".join(json.dumps(v) + "\n" for v in values).encode()


@pytest.fixture(scope="module")
def fuzz_target(http, admin_headers):
    existing = {w["id"] for w in http.get("/v1/workspaces", headers=admin_headers).json()["items"]}
    created = http.post("/v1/workspaces", headers=admin_headers, json={"id": PINNED})
    assert created.status_code == 201, created.text
    token = created.json()["token"]
    headers = {"Authorization": f"Bearer {token}"}
    first = http.post(f"/v1/w/{PINNED}/capture", headers=headers,
                      json={"content": "fuzzing starts from a real entry"}).json()["id"]
    yield {"token": token, "entry": first}
    listed = http.get("/v1/workspaces", headers=admin_headers).json()["items"]
    for workspace in listed:                 # what the fuzzer itself created, and the target
        if workspace["id"] not in existing:
            http.delete(f"/v1/workspaces/{workspace['id']}", headers=admin_headers)


@pytest.fixture(scope="module")
def live_schema(service, fuzz_target):
    return schemathesis.openapi.from_url(f"{service['url']}/openapi.json")


schema = schemathesis.pytest.from_fixture("live_schema")


def pin(case, entry_id: str) -> None:
    params = case.path_parameters or {}
    for name in ("workspace", "workspace_id"):
        if name in params:
            params[name] = GONE if case.method == "DELETE" and case.path.endswith(
                "{workspace_id}") else PINNED
    if "token_id" in params:
        params["token_id"] = "tok-" + "0" * 16
    if case.path.endswith("/{method}") and "method" in params:
        params["method"] = "getCount"
    case.path_parameters = params


def record(case, response, who: str) -> None:
    tally["requests"] += 1
    tally["operations"].add(f"{case.method} {case.path}")
    where = f"{who} {case.method} {case.formatted_path} -> {response.status_code}"
    if response.status_code >= 500:
        tally["5xx"].append(f"{where}: {response.text[:200]}")
    elif response.status_code >= 400:
        try:
            error = response.json().get("error", {})
        except ValueError:
            error = {}
        if set(error) != {"code", "message"}:
            tally["bad 4xx"].append(f"{where}: {response.text[:200]}")


@schema.parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None,
          suppress_health_check=list(HealthCheck))
def test_no_operation_answers_5xx_or_an_unstructured_4xx(case, service, admin_headers,
                                                         fuzz_target):
    pin(case, fuzz_target["entry"])
    workspace = {"Authorization": f"Bearer {fuzz_target['token']}"}
    for who, headers in (("admin", admin_headers), ("workspace", workspace)):
        response = case.call(base_url=service["url"], headers=headers, timeout=60)
        record(case, response, who)


def test_the_fuzzing_covered_every_operation_without_a_5xx(http, admin_headers):
    print(f"\nschemathesis: {tally['requests']} requests over {len(tally['operations'])} "
          f"operations; 5xx: {len(tally['5xx'])}; unstructured 4xx: {len(tally['bad 4xx'])}")
    assert tally["requests"] > 0, "the fuzzing test did not run first"
    assert tally["5xx"] == []
    assert tally["bad 4xx"] == []
    routed = {f"/v1/w/{{workspace}}/{name}" for name in METHODS}
    assert routed <= {op.split(" ", 1)[1] for op in tally["operations"]}
    # the pinned workspace is still sound: nothing the fuzzer sent broke it
    count = http.post(f"/v1/w/{PINNED}/getCount", headers=admin_headers, json={})
    assert count.status_code == 200
