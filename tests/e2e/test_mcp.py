"""The MCP endpoint through real Ray Serve (the ingress replica's gateway, the workspace
actors), driven by the protocol's own SDK client: every tool, a read token, a wrong token,
and the failed-authentication budget it shares with the RPC routes."""

from __future__ import annotations

import asyncio

import httpx

from minisphere.contract.tools import TOOL_ARGUMENTS
from minisphere.engine.methods import METHODS
from tests.support.mcp_session import (
    INITIALIZE,
    MCP_ACCEPT,
    call_ok,
    exercise_every_tool,
    mcp_session,
    refusal_of,
)


def read_token(http, admin_headers, workspace: str) -> str:
    answer = http.post(
        f"/v1/workspaces/{workspace}/tokens", json={"scope": "read"}, headers=admin_headers
    )
    assert answer.status_code == 201, answer.text
    return answer.json()["token"]


def test_every_tool_through_serve_and_a_read_token_sees_only_reads(
    service, http, admin_headers, new_workspace
):
    workspace, headers = new_workspace()
    token = headers["Authorization"].removeprefix("Bearer ")
    reader = read_token(http, admin_headers, workspace)
    endpoint = f"{service['url']}/v1/w/{workspace}/mcp"

    async def exercise():
        async with mcp_session(endpoint, token) as session:
            tools = (await session.list_tools()).tools
            answers = await exercise_every_tool(session)
        async with mcp_session(endpoint, reader) as session:
            read_tools = [tool.name for tool in (await session.list_tools()).tools]
            count = await call_ok(session, "getCount")
            refused = await session.call_tool("forget", {"id": answers["capture"]["id"]})
        return tools, answers, read_tools, count, refused

    tools, answers, read_tools, count, refused = asyncio.run(exercise())
    assert [tool.name for tool in tools] == list(TOOL_ARGUMENTS)
    assert {t.name for t in tools if t.annotations.destructive_hint} == {"forget", "unlink"}
    assert set(answers) == set(TOOL_ARGUMENTS) and count == {"count": 1}
    assert read_tools == [name for name in TOOL_ARGUMENTS if METHODS[name].access == "read"]
    assert refusal_of(refused)["code"] == "insufficient_scope"


def test_a_wrong_token_is_401_and_spends_the_budget_the_rpc_routes_spend(service, new_workspace):
    workspace, headers = new_workspace()
    mcp_url, rpc_url = f"/v1/w/{workspace}/mcp", f"/v1/w/{workspace}/getCount"
    # an address of its own, so the budget it spends is no other test's
    with httpx.Client(
        base_url=service["url"],
        timeout=30,
        transport=httpx.HTTPTransport(local_address="127.0.0.78"),
    ) as flooder:
        # the good token first, so the ingress knows it (a known token is never slowed)
        assert (
            flooder.post(mcp_url, json=INITIALIZE, headers={**MCP_ACCEPT, **headers}).status_code
            == 200
        )
        first = flooder.post(
            mcp_url, json=INITIALIZE, headers={**MCP_ACCEPT, "Authorization": "Bearer msw_bad_0"}
        )
        assert first.status_code == 401 and first.headers["WWW-Authenticate"].startswith("Bearer")
        statuses = [
            flooder.post(
                mcp_url,
                json=INITIALIZE,
                headers={**MCP_ACCEPT, "Authorization": f"Bearer msw_bad_{i}"},
            ).status_code
            for i in range(1, 40)
        ]
        assert 429 in statuses
        # the same address's next guess on an RPC route finds the budget spent too
        rpc = flooder.post(rpc_url, json={}, headers={"Authorization": "Bearer msw_bad_rpc"})
        assert rpc.status_code == 429 and rpc.json()["error"]["code"] == "rate_limited"
        good = flooder.post(mcp_url, json=INITIALIZE, headers={**MCP_ACCEPT, **headers})
        assert good.status_code == 200
