"""Schemathesis over the live OpenAPI document of the running service: every operation, with
its path parameters pinned to a real workspace (so requests reach the handlers, not a 404) and
each case sent once with the admin token and once with the workspace's own token. No answer
may be a 5xx, and every 4xx must be the JSON error body `{"error": {"code", "message"}}`.

One test draws and sends every case and gives the verdict, so it is right whichever tests ran
before it or were deselected. Cases come from schemathesis's own strategies (`as_strategy`)
driven by hypothesis directly, not through schemathesis's pytest plugin, whose hooks follow
pytest's internals and broke on a pytest release."""

from __future__ import annotations

import json

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from minisphere.engine.methods import METHODS

PINNED = "fuzz-target"
GONE = "fuzz-never-created"  # destructive routes aim here: they reach the handler
EXAMPLES_PER_OPERATION = {GenerationMode.POSITIVE: 15, GenerationMode.NEGATIVE: 6}
REQUEST_TIMEOUT_S = 60


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
    first = http.post(
        f"/v1/w/{PINNED}/capture",
        headers=headers,
        json={"content": "fuzzing starts from a real entry"},
    ).json()["id"]
    yield {"token": token, "entry": first}
    listed = http.get("/v1/workspaces", headers=admin_headers).json()["items"]
    for workspace in listed:  # what the fuzzer itself created, and the target
        if workspace["id"] not in existing:
            http.delete(f"/v1/workspaces/{workspace['id']}", headers=admin_headers)


def pinned_parameters(operation) -> dict:
    """Path parameters fixed to real values: the pinned workspace (a DELETE of a workspace aims
    at one never created), a well-formed token id, and a real method for the generic route."""
    names = {p.name for p in operation.path_parameters}
    pinned = {}
    verb = operation.method.upper()
    for name in ("workspace", "workspace_id"):
        if name in names:
            doomed = verb == "DELETE" and operation.path.endswith("{workspace_id}")
            # a rebind embeds every entry through whatever endpoint its body names: aimed at a
            # workspace never created, its body is checked and no address is ever called
            rebinds = verb == "POST" and operation.path.endswith("/vector-binding")
            pinned[name] = GONE if doomed or rebinds else PINNED
    if "token_id" in names:
        pinned["token_id"] = "tok-" + "0" * 16
    if "method" in names:
        pinned["method"] = "getCount"
    return pinned


class Tally:
    def __init__(self):
        self.requests = 0
        self.server_errors: list[str] = []
        self.unstructured: list[str] = []
        self.operations: set[str] = set()
        self.without_negative_cases: set[str] = set()

    def record(self, case, response, who: str) -> None:
        self.requests += 1
        self.operations.add(f"{case.method} {case.path}")
        where = f"{who} {case.method} {case.formatted_path} -> {response.status_code}"
        if response.status_code >= 500:
            self.server_errors.append(f"{where}: {response.text[:200]}")
        elif response.status_code >= 400:
            try:
                error = response.json().get("error", {})
            except (ValueError, AttributeError):
                error = {}
            if not isinstance(error, dict) or set(error) != {"code", "message"}:
                self.unstructured.append(f"{where}: {response.text[:200]}")


def fuzz_operation(operation, mode, url: str, callers: dict, tally: Tally) -> None:
    strategy = operation.as_strategy(
        generation_mode=mode, path_parameters=pinned_parameters(operation)
    )

    @given(case=strategy)
    @settings(
        max_examples=EXAMPLES_PER_OPERATION[mode],
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def send(case):
        for who, headers in callers.items():
            response = case.call(base_url=url, headers=headers, timeout=REQUEST_TIMEOUT_S)
            tally.record(case, response, who)

    try:
        send()
    except Unsatisfiable:
        # an operation with nothing to get wrong (no parameters, no body) has no negative
        # cases; any other operation must produce cases
        if mode is not GenerationMode.NEGATIVE:
            raise
        tally.without_negative_cases.add(operation.label)


def test_no_operation_answers_5xx_or_an_unstructured_4xx(service, http, admin_headers, fuzz_target):
    schema = schemathesis.openapi.from_url(f"{service['url']}/openapi.json")
    callers = {
        "admin": admin_headers,
        "workspace": {"Authorization": f"Bearer {fuzz_target['token']}"},
    }
    tally = Tally()
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in EXAMPLES_PER_OPERATION:
            fuzz_operation(operation, mode, service["url"], callers, tally)
    print(
        f"\nschemathesis: {tally.requests} requests over {len(tally.operations)} "
        f"operations; 5xx: {len(tally.server_errors)}; "
        f"unstructured 4xx: {len(tally.unstructured)}; operations with no negative case: "
        f"{sorted(tally.without_negative_cases)}"
    )
    assert tally.server_errors == []
    assert tally.unstructured == []
    routed = {f"/v1/w/{{workspace}}/{name}" for name in METHODS}
    assert routed <= {op.split(" ", 1)[1] for op in tally.operations}
    # the pinned workspace is still sound: nothing the fuzzer sent broke it
    count = http.post(f"/v1/w/{PINNED}/getCount", headers=admin_headers, json={})
    assert count.status_code == 200
