"""Wrong admin tokens through the real app (`tests/support/engine_gateway.py`: a real control
plane, the service's own admin check): each spends the caller's budget of admin guesses and
once it is spent the address gets 429 with `Retry-After`; the admin token itself and a
workspace token (a valid token without the rights) never spend it."""

import asyncio

import httpx
import pytest

from minisphere.control.token_cache import ADMIN_GUESS_BURST
from tests.support.engine_gateway import ADMIN_TOKEN, BASE_URL, EngineGateway, engine_api

ADMIN_ROUTES = [
    ("GET", "/v1/workspaces"),
    ("GET", "/v1/workspaces/notes"),
    ("GET", "/v1/workspaces/notes/tokens"),
    ("GET", "/v1/maintenance/runs"),
    ("POST", "/v1/workspaces/notes/hibernate"),
]


@pytest.fixture
def app(tmp_path):
    gateway = EngineGateway(tmp_path)
    created = gateway.create_now("notes")
    yield engine_api(gateway), created["token"]
    gateway.close()


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def send_all(api, requests: list[tuple[str, str, dict]], at_once: bool = False):
    """(method, path, headers) requests from 127.0.0.1, one after another or all at once."""

    async def go():
        transport = httpx.ASGITransport(app=api, client=("127.0.0.1", 50000))
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
            sends = [
                client.request(method, path, headers=headers) for method, path, headers in requests
            ]
            if at_once:
                return await asyncio.gather(*sends)
            return [await one for one in sends]

    return asyncio.run(go())


def test_guessing_the_admin_token_is_rate_limited_per_address_and_the_admin_is_not(app):
    api, _ = app
    guesses = [
        (method, path, bearer(f"msa_guess-{i}-{path}"))
        for i in range(ADMIN_GUESS_BURST)
        for method, path in ADMIN_ROUTES[:1]
    ]
    then = [
        ("GET", "/v1/workspaces/notes", bearer("msa_one-guess-too-many")),
        ("GET", "/v1/workspaces", bearer(ADMIN_TOKEN)),
    ]
    answers = send_all(api, guesses + then)
    assert [a.status_code for a in answers[:ADMIN_GUESS_BURST]] == [401] * ADMIN_GUESS_BURST
    limited, admin = answers[ADMIN_GUESS_BURST:]
    assert limited.status_code == 429, limited.text
    assert limited.json()["error"]["code"] == "rate_limited"
    assert 1 <= int(limited.headers["Retry-After"]) <= 2
    assert admin.status_code == 200, admin.text


def test_a_workspace_token_at_admin_routes_spends_no_guess_of_its_address(app):
    """Sent many more times than the guess budget, a workspace token is refused (401) at every
    admin route without a single 429; the address's full budget of guesses is still there."""
    api, tenant = app
    refused = [(method, path, bearer(tenant)) for method, path in ADMIN_ROUTES] * 10
    guesses = [
        ("GET", "/v1/workspaces", bearer(f"msa_guess-{i}")) for i in range(ADMIN_GUESS_BURST)
    ]
    answers = send_all(api, refused + guesses)
    assert {a.status_code for a in answers} == {401}
    assert (
        send_all(api, [("GET", "/v1/workspaces", bearer("msa_past-the-budget"))])[0].status_code
        == 429
    )


def test_admin_guesses_sent_at_once_get_no_more_than_the_budget_through(app):
    api, _ = app
    flood = [("GET", "/v1/workspaces", bearer(f"msa_guess-{i}")) for i in range(200)]
    answers = send_all(api, flood, at_once=True)
    statuses = [a.status_code for a in answers]
    assert statuses.count(401) <= ADMIN_GUESS_BURST
    assert statuses.count(429) >= 200 - ADMIN_GUESS_BURST
    assert send_all(api, [("GET", "/v1/workspaces", bearer(ADMIN_TOKEN))])[0].status_code == 200
