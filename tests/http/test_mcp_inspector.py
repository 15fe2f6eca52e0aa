"""The MCP endpoint as a client no one here wrote sees it: the MCP Inspector's CLI (npm
`@modelcontextprotocol/inspector`, pinned in tests/mcp_inspector, installed there by .ci/run
with `npm ci`) lists the tools (its strict check of their schemas' portability included) and
calls one, against the real app over real engine files. Skipped, saying why, where Node or the
installed inspector is missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from minisphere.contract.tools import TOOL_ARGUMENTS
from tests.support.engine_gateway import EngineGateway, engine_api, serve

INSPECTOR = (
    Path(__file__).resolve().parents[1]
    / "mcp_inspector"
    / "node_modules"
    / ".bin"
    / "mcp-inspector"
)
NODE = shutil.which("node")
INSPECTOR_TIMEOUT_S = 120

pytestmark = [
    pytest.mark.skipif(NODE is None, reason="Node.js is not installed (Debian's nodejs)"),
    pytest.mark.skipif(
        not INSPECTOR.exists(),
        reason="the MCP Inspector is not installed: "
        "npm ci --prefix tests/mcp_inspector (as .ci/run does)",
    ),
]


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    gateway = EngineGateway(tmp_path_factory.mktemp("inspector"))
    created = gateway.create_now()
    with serve(engine_api(gateway)) as url:
        yield f"{url}/v1/w/{created['workspace']['id']}/mcp", created["token"]
    gateway.close()


def inspect(endpoint, tmp_path, *arguments: str) -> dict:
    url, token = endpoint
    ran = subprocess.run(
        [
            NODE,
            str(INSPECTOR),
            "--cli",
            url,
            "--transport",
            "http",
            "--header",
            f"Authorization: Bearer {token}",
            *arguments,
        ],
        capture_output=True,
        text=True,
        timeout=INSPECTOR_TIMEOUT_S,
        env={**os.environ, "MCP_CATALOG_PATH": str(tmp_path / "catalog.json")},
    )
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def test_the_inspector_lists_every_tool_and_finds_their_schemas_portable(endpoint, tmp_path):
    listed = inspect(endpoint, tmp_path, "--method", "tools/list", "--strict")
    assert [tool["name"] for tool in listed["tools"]] == list(TOOL_ARGUMENTS)
    forget = next(tool for tool in listed["tools"] if tool["name"] == "forget")
    assert forget["annotations"]["destructiveHint"] is True and "outputSchema" in forget


def test_the_inspector_calls_a_tool(endpoint, tmp_path):
    called = inspect(
        endpoint,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "capture",
        "--tool-arg",
        "content=captured by the MCP Inspector",
    )
    assert called["isError"] is False
    assert called["structuredContent"]["outcome"] == "stored"
