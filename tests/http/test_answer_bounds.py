"""Bounded answers as the published schema describes them, through the real app over a real
engine workspace: a graphView edge whose metadata was left out, and the 429 of a spent budget
of admin guesses, both validate against `/openapi.json`."""

import asyncio

import httpx
import jsonschema
import pytest

from minisphere.control.token_cache import ADMIN_GUESS_BURST
from minisphere.engine import constants as C
from tests.support.engine_gateway import ADMIN_TOKEN, BASE_URL, EngineGateway, engine_api


@pytest.fixture
def app(tmp_path):
    gateway = EngineGateway(tmp_path)
    token = gateway.create_now("notes")["token"]
    yield engine_api(gateway), {"Authorization": f"Bearer {token}"}
    gateway.close()


def exchange(api, requests):
    async def go():
        transport = httpx.ASGITransport(app=api, client=("127.0.0.1", 50001))
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
            return [await client.request(method, path, **kw) for method, path, kw in requests]

    return asyncio.run(go())


def check(document: dict, verb: str, path: str, response: httpx.Response) -> dict:
    schema = document["paths"][path][verb]["responses"][str(response.status_code)]["content"][
        "application/json"
    ]["schema"]
    validator = jsonschema.Draft202012Validator({**schema, "components": document["components"]})
    problems = [
        f"{list(p.absolute_path)}: {p.message}" for p in validator.iter_errors(response.json())
    ]
    assert problems == [], problems[:5]
    return response.json()


def test_a_graph_view_that_left_edge_metadata_out_answers_what_its_schema_says(app):
    api, tenant = app
    [spec, a, b, c] = exchange(
        api,
        [("GET", "/openapi.json", {})]
        + [
            ("POST", "/v1/w/notes/capture", {"json": {"content": f"entry {n}"}, "headers": tenant})
            for n in range(3)
        ],
    )
    a, b, c = (r.json()["id"] for r in (a, b, c))
    large = {"note": "m" * (C.MAX_METADATA_BYTES - 20)}
    linked = exchange(
        api,
        [
            (
                "POST",
                "/v1/w/notes/link",
                {
                    "json": {"src": a, "dst": b, "type": "relates_to", "metadata": large},
                    "headers": tenant,
                },
            ),
            (
                "POST",
                "/v1/w/notes/link",
                {
                    "json": {"src": a, "dst": c, "type": "relates_to", "metadata": {"k": 1}},
                    "headers": tenant,
                },
            ),
            ("POST", "/v1/w/notes/graphView", {"json": {"seedIds": [a]}, "headers": tenant}),
        ],
    )
    assert [r.status_code for r in linked] == [200, 200, 200], linked[-1].text
    view = check(spec.json(), "post", "/v1/w/{workspace}/graphView", linked[-1])
    edges = {frozenset((e["src"], e["dst"])): e for e in view["edges"]}
    assert edges[frozenset((a, b))]["metadataOmitted"] is True
    assert edges[frozenset((a, b))]["metadata"] is None
    assert edges[frozenset((a, c))]["metadata"] == {"k": 1}


def test_a_spent_budget_of_admin_guesses_answers_what_its_schema_says(app):
    api, _ = app
    guesses = [
        ("GET", "/v1/workspaces", {"headers": {"Authorization": f"Bearer msa_g{i}"}})
        for i in range(ADMIN_GUESS_BURST + 1)
    ]
    answers = exchange(
        api,
        [
            ("GET", "/openapi.json", {}),
            *guesses,
            ("GET", "/v1/workspaces", {"headers": {"Authorization": f"Bearer {ADMIN_TOKEN}"}}),
        ],
    )
    spec, limited, admin = answers[0].json(), answers[-2], answers[-1]
    assert limited.status_code == 429
    assert check(spec, "get", "/v1/workspaces", limited)["error"]["code"] == "rate_limited"
    assert check(spec, "get", "/v1/workspaces", admin)["items"][0]["id"] == "notes"
