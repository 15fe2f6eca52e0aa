"""The per-request log line: its shape, and that it never carries content, queries or tokens."""

from __future__ import annotations

import asyncio
import functools
import json
import logging

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from minisphere.engine.methods import METHODS
from minisphere.errors import NotFound, Unauthenticated
from minisphere.http.app import build_api
from minisphere.http.request_log import RouteTable, classify, outcome_of, route_label

TOKEN = "msw_secret-token-value-1234567890"
SECRET_CONTENT = "the launch code is 0000-SECRET"
SECRET_QUERY = "what is the launch code"
FIELDS = {
    "event",
    "requestId",
    "workspace",
    "method",
    "route",
    "httpMethod",
    "status",
    "outcome",
    "latencyMs",
}


class FakeGateway:
    def is_admin(self, token):
        return token == TOKEN

    async def require_admin(self, token, client=""):
        if token != TOKEN:
            raise Unauthenticated("this route needs the admin token")

    async def authorize(self, workspace, token, method, client=""):
        await self.require_admin(token)

    async def call(self, workspace, method, body, caller=None, idempotency_key=None):
        if method == "getEntry":
            raise NotFound(f"no entry with id {body.id}")
        return {"echo": body.model_dump(by_alias=True)}, {"engine_ms": 0.1}


def run_requests(requests, caplog, request_log: bool = True):
    observed: list[dict] = []
    api = build_api(FakeGateway(), [], observe=observed.append, request_log=request_log)

    async def go():
        transport = httpx.ASGITransport(app=api)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return [await client.request(m, url, **kw) for m, url, kw in requests]

    with caplog.at_level(logging.INFO, logger="minisphere.requests"):
        responses = asyncio.run(go())
    lines = [r.getMessage() for r in caplog.records if r.name == "minisphere.requests"]
    return responses, [json.loads(line) for line in lines], lines, observed


def test_infra_request_log_line_shape_and_no_secrets(caplog):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    responses, records, lines, observed = run_requests(
        [
            ("POST", "/v1/w/notes/capture", {"json": {"content": SECRET_CONTENT}, "headers": auth}),
            (
                "POST",
                "/v1/w/notes/recall?debug=" + SECRET_QUERY,
                {"json": {"query": SECRET_QUERY}, "headers": {**auth, "X-Request-Id": "req-42"}},
            ),
            (
                "POST",
                "/v1/w/notes/getEntry",
                {"json": {"id": "123e4567-e89b-42d3-a456-426614174000"}, "headers": auth},
            ),
            (
                "POST",
                "/v1/w/notes/recall",
                {
                    "json": {"query": SECRET_QUERY},
                    "headers": {"Authorization": "Bearer wrong-" + TOKEN},
                },
            ),
            ("GET", "/healthz", {}),
            ("POST", "/v1/w/../../etc/nope", {}),
        ],
        caplog,
    )
    assert [r.status_code for r in responses] == [200, 200, 404, 401, 200, 404]
    assert len(records) == 6 and observed == records
    for record in records:
        assert set(record) == FIELDS
        assert isinstance(record["latencyMs"], float) and record["latencyMs"] >= 0
    capture, recall, missing, denied, health, bogus = records
    assert (capture["workspace"], capture["method"], capture["status"], capture["outcome"]) == (
        "notes",
        "capture",
        200,
        "ok",
    )
    assert recall["requestId"] == "req-42" and responses[1].headers["x-request-id"] == "req-42"
    assert responses[0].headers["x-request-id"] == capture["requestId"]
    assert (missing["outcome"], denied["outcome"]) == ("not_found", "unauthenticated")
    assert (health["route"], health["method"], health["workspace"]) == ("service", "healthz", None)
    assert bogus["method"] == "unknown"
    text = "\n".join(lines)
    for secret in (TOKEN, SECRET_CONTENT, SECRET_QUERY, "launch", "debug"):
        assert secret not in text


def test_without_request_log_lines_the_metrics_still_see_every_request(caplog):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    requests = [
        ("POST", "/v1/w/notes/capture", {"json": {"content": "x"}, "headers": auth}),
        ("GET", "/healthz", {}),
    ]
    _, records, lines, observed = run_requests(requests, caplog, request_log=False)
    assert records == [] and lines == []
    assert [(r["method"], r["status"]) for r in observed] == [("capture", 200), ("healthz", 200)]


def test_the_route_the_router_matched_labels_a_request_as_a_scan_of_every_route_would(caplog):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    requests = [
        ("POST", "/v1/w/notes/capture", {"json": {"content": "x"}, "headers": auth}),
        ("POST", "/v1/w/notes/recall", {"json": {"query": "q"}, "headers": auth}),
        ("DELETE", "/v1/workspaces/notes/tokens/t-1", {"headers": {}}),
        ("GET", "/healthz", {}),
        ("GET", "/v1/w/notes/capture", {}),  # a route's path with a method it does not serve
        ("POST", "/v1/nowhere", {}),
    ]
    _, _, _, observed = run_requests(requests, caplog, request_log=False)
    routes = build_api(FakeGateway(), []).router.routes
    for (verb, url, _), record in zip(requests, observed, strict=True):
        scanned = classify(verb, url, routes)
        assert {k: record[k] for k in scanned} == scanned, url


def test_infra_request_log_classification_is_bounded():
    routes = build_api(FakeGateway(), [], transfer=object()).router.routes
    assert classify("GET", "/v1/workspaces/notes/export", routes) == {
        "route": "admin",
        "method": "admin.export",
        "workspace": "notes",
    }
    assert classify("DELETE", "/v1/workspaces/notes", routes)["method"] == "admin.delete"
    assert classify("POST", "/v1/workspaces", routes)["method"] == "admin.create"
    assert classify("POST", "/v1/w/notes/dropTables", routes)["method"] == "unknown"
    assert classify("POST", "/v1/w/NOT A VALID ID!/recall", routes)["workspace"] is None
    assert outcome_of(200, b"") == "ok"
    assert outcome_of(503, b"<html>") == "http_503"
    assert outcome_of(422, b'{"error": {"code": "a code with spaces"}}') == "http_422"


OBSERVED: list[dict] = []  # what the app built once below reported, cleared by each example


@functools.cache
def observed_api():
    """One app for every example: building it (its routes' pydantic models) takes longer than
    the forty requests an example sends."""
    return build_api(FakeGateway(), [], transfer=object(), observe=OBSERVED.append)


JUNK_SEGMENT = st.text(st.sampled_from("abcxyzABCZ0129-._~!$&'()*+,;=:@"), min_size=1, max_size=24)


@settings(max_examples=60, deadline=None)
@given(
    junk=st.lists(
        st.tuples(
            st.sampled_from(["GET", "POST", "DELETE", "PUT"]),
            st.lists(JUNK_SEGMENT, min_size=1, max_size=3),
        ),
        min_size=20,
        max_size=40,
        unique_by=lambda j: tuple(j[1]),
    )
)
def test_metric_labels_stay_bounded_however_many_junk_paths_arrive(junk):
    """Unauthenticated junk under every prefix the app serves: the labels the metrics get are
    only the route table's own (or `unknown`), however many distinct paths arrive."""
    OBSERVED.clear()
    observed, api = OBSERVED, observed_api()
    known = RouteTable(api.router.routes).labels()
    prefixes = ["/v1/workspaces/notes/", "/v1/workspaces/", "/v1/w/notes/", "/v1/", "/"]
    requests = [
        (method, prefixes[i % len(prefixes)] + "/".join(segments), {})
        for i, (method, segments) in enumerate(junk)
    ]

    async def go():
        transport = httpx.ASGITransport(app=api)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            for method, url, kw in requests:
                await client.request(method, url, **kw)

    asyncio.run(go())
    labels = {record["method"] for record in observed}
    assert len(observed) == len(requests)
    assert labels <= known | {"unknown"}, labels - known
    assert len(known) <= len(api.router.routes)


def test_every_route_of_the_app_has_its_own_label():
    api = build_api(FakeGateway(), [], transfer=object())
    table = RouteTable(api.router.routes)
    labels = {route_label(route)[1] for route in api.router.routes}
    assert "unknown" not in labels
    assert {
        "admin.create",
        "admin.list",
        "admin.get",
        "admin.delete",
        "admin.snapshot",
        "admin.snapshots",
        "admin.restore",
        "admin.hibernate",
        "admin.export",
        "admin.import",
        "maintenance.runs",
        "healthz",
        "contracts",
        "docs",
        "openapi",
    } <= labels
    assert set(METHODS) <= labels
    assert table.classify("POST", "/v1/workspaces/notes/frobnicate")["method"] == "unknown"
    assert table.classify("GET", "/v1/workspaces/notes/snapshots")["method"] == "admin.snapshots"
