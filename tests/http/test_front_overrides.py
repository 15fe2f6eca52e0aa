"""A caller cannot lift the front's limits with the headers Ray Serve's Python proxy honours
(`x-request-timeout-seconds`, `x-request-disconnect-disabled`): any request carrying one is
refused 400 at once and runs nothing. The real app over real engine workspaces, in process."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minisphere.http.app import build_api
from tests.support.engine_gateway import EngineGateway, SyncASGITransport

OVERRIDES = ["x-request-timeout-seconds", "x-request-disconnect-disabled"]


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    gateway = EngineGateway(tmp_path_factory.mktemp("front-overrides"))
    made = gateway.create_now()
    api = build_api(gateway, [], max_inflight=8)
    with httpx.Client(transport=SyncASGITransport(api), base_url="http://test") as client:
        yield client, made["workspace"]["id"], {"Authorization": f"Bearer {made['token']}"}


@settings(max_examples=25, deadline=None)
@given(
    header=st.sampled_from(OVERRIDES),
    spelling=st.sampled_from([str.lower, str.upper, str.title]),
    value=st.sampled_from(["0", "-1", "3600", "?1", "?0", "junk", ""]),
)
def test_a_request_lifting_the_fronts_timeout_is_refused_and_writes_nothing(
    live, header, spelling, value
):
    client, ws, auth = live
    before = client.post(f"/v1/w/{ws}/getCount", headers=auth, json={}).json()["count"]
    refused = client.post(
        f"/v1/w/{ws}/capture",
        headers={**auth, spelling(header): value},
        json={"content": "sent with a lifted limit"},
    )
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "malformed_request"
    assert client.post(f"/v1/w/{ws}/getCount", headers=auth, json={}).json()["count"] == before


def test_an_ordinary_request_is_answered(live):
    client, ws, auth = live
    assert (
        client.post(f"/v1/w/{ws}/capture", headers=auth, json={"content": "x"}).status_code == 200
    )
