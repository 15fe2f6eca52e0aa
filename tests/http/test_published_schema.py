"""The published OpenAPI document states the rules the engine enforces on each method's body.

Bodies are drawn from `/openapi.json` by schemathesis's own generator (what a fuzzer or a
client generated from the schema sends) and sent through the real app to real engine files
(tests/support/engine_gateway.py). The engine's validation must accept almost all of them: an
answer may still be 404 (a well-formed id of no entry) or a refusal that depends on the data
(self_link, kind_gate_violation), but not `invalid_argument` or `content_too_large`. A schema
that admits what the engine refuses (an id of any shape, a blank content, a tag of control
characters) makes schemathesis warn that an operation "mostly rejected generated data", and
tells clients nothing of the rules they broke.

The other direction is checked too: bodies the engine accepts validate against the schema, so
the patterns are never stricter than the engine where it matters."""

from __future__ import annotations

import collections
import re

import httpx
import jsonschema
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.core import NOT_SET

from minisphere.control.auth import check_workspace_id
from minisphere.engine.methods import METHODS
from minisphere.errors import MalformedRequest
from minisphere.http.callers import WORKSPACE_ID_SHAPE
from tests.support.engine_gateway import (
    ADMIN_TOKEN,
    BASE_URL,
    EngineGateway,
    SyncASGITransport,
    engine_api,
)
from tests.support.stable_draws import without_local_constants

WORKSPACE = "schema-check"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
BODIES_PER_METHOD = 50
# Refusals the published schema cannot state: a tag whose NFKC form is longer than it is, or
# that holds a format or unassigned character (a portable pattern cannot name Unicode's
# categories); an edge metadata object over its byte limit. Rare in generated data.
MOST_REFUSED = 0.1
# the engine's own validation, as opposed to an answer that depends on what the workspace holds
VALIDATION_CODES = {"invalid_argument", "content_too_large", "malformed_request"}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    gateway = EngineGateway(tmp_path_factory.mktemp("published-schema"))
    gateway.create_now(WORKSPACE)
    api = engine_api(gateway)
    transport = SyncASGITransport(api)
    with httpx.Client(base_url=BASE_URL, transport=transport) as client:
        yield api, client
    transport.close()
    gateway.close()


@pytest.fixture(scope="module")
def published(app):
    api, _ = app
    return api.openapi()


def request_schema(document: dict, method: str) -> dict:
    body = document["paths"][f"/v1/w/{{workspace}}/{method}"]["post"]["requestBody"]
    return body["content"]["application/json"]["schema"]


@pytest.mark.parametrize("method", sorted(METHODS))
def test_bodies_generated_from_the_published_schema_pass_the_engines_validation(
    app, published, method
):
    _, client = app
    operation = schemathesis.openapi.from_dict(published)[f"/v1/w/{{workspace}}/{method}"]["POST"]
    strategy = operation.as_strategy(
        generation_mode=GenerationMode.POSITIVE, path_parameters={"workspace": WORKSPACE}
    )
    answers: collections.Counter = collections.Counter()
    refused: list[str] = []

    @given(case=strategy)
    @settings(
        max_examples=BODIES_PER_METHOD,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    def send(case):
        body = {} if case.body is NOT_SET else {"json": case.body}
        response = client.post(f"/v1/w/{WORKSPACE}/{method}", headers=ADMIN, **body)
        code = response.json()["error"]["code"] if response.status_code >= 400 else "ok"
        assert response.status_code < 500, response.text
        answers[code] += 1
        if code in VALIDATION_CODES:
            refused.append(f"{str(case.body)[:120]} -> {response.json()['error']['message']}")

    with without_local_constants():  # the same bodies alone and in the suite
        send()
    total = sum(answers.values())
    assert len(refused) <= MOST_REFUSED * total, (
        f"{method}: the engine refused {len(refused)} of {total} bodies its published schema "
        f"admits ({dict(answers)}), e.g. " + "; ".join(refused[:3])
    )


ACCEPTED = {  # bodies the engine accepts, including the edges of each rule
    "capture": {
        "content": "  Deploys run on Fridays \n",
        "tags": ["Deploy Notes", " ops ", "größe", "日本語", "a" * 64],
        "claimTag": "VERIFIED",
    },
    "append": {
        "id": "123e4567-e89b-42d3-a456-426614174000",
        "addition": "x",
        "tags": ["state:as-of"],
    },
    "update": {"id": "123e4567-e89b-42d3-a456-426614174000", "content": "é\nfin"},
    "recall": {"query": "what runs on fridays?", "topK": 5.0, "tag": "Deploy Notes"},
    "listRecent": {"n": 200, "tag": "ops"},
    "graphView": {"seedIds": ["123e4567-e89b-42d3-a456-426614174000"], "hops": 3},
    "link": {
        "src": "123e4567-e89b-42d3-a456-426614174000",
        "dst": "00000000-0000-4000-8000-000000000000",
        "type": "follows",
        "metadata": {"why": "order"},
    },
    "runStalenessPass": {"limit": 100_000},
}


@pytest.mark.parametrize("method", sorted(ACCEPTED))
def test_the_published_schema_admits_what_the_engine_accepts(app, published, method):
    _, client = app
    body = ACCEPTED[method]
    response = client.post(f"/v1/w/{WORKSPACE}/{method}", headers=ADMIN, json=body)
    assert (
        response.status_code == 200 or response.json()["error"]["code"] not in VALIDATION_CODES
    ), response.text
    schema = {**request_schema(published, method), "components": published["components"]}
    problems = [p.message for p in jsonschema.Draft202012Validator(schema).iter_errors(body)]
    assert problems == []


@given(st.text(alphabet="abcz09-_A\n", max_size=70))
@settings(max_examples=500, deadline=None)
def test_the_published_workspace_id_pattern_is_the_rule_the_routes_apply(candidate):
    """The path parameters publish one pattern; the routes check WORKSPACE_ID_PATTERN and, after
    it, that the id does not end with '-'. Both say yes to the same ids."""
    try:
        check_workspace_id(candidate)
        accepted = True
    except MalformedRequest:
        accepted = False
    assert bool(re.fullmatch(WORKSPACE_ID_SHAPE, candidate)) == accepted
