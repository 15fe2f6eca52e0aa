"""What the LangChain standard suites do not check: the metadata each Document carries, the
options as fields and per call, the async path over the async client, refusals, and that the
tools' schemas are the engine's own argument models."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

pytest.importorskip("langchain_core")

from minisphere.client import ServiceError
from minisphere.integrations.langchain import (
    DEFAULT_TOOLS,
    MinisphereRetriever,
    minisphere_tools,
)
from minisphere.integrations.tool_specs import TOOL_ARGUMENTS
from tests.integrations.conftest import QUERY


def test_each_document_carries_the_entry_and_its_score_breakdown(live):
    live.ws.capture(
        "SQLite decisions are recorded as ADRs",
        tags=["adr"],
        kind="episodic",
        claim_tag="VERIFIED",
        evidence_ref="docs/adr/0001.md",
    )
    [doc] = MinisphereRetriever(workspace=live.ws, tag="adr").invoke(QUERY)
    assert doc.id and doc.metadata["id"] == doc.id
    assert doc.metadata["tags"] == ["adr"] and doc.metadata["kind"] == "episodic"
    assert doc.metadata["claim_tag"] == "VERIFIED"
    assert doc.metadata["evidence_ref"] == "docs/adr/0001.md"
    assert doc.metadata["breakdown"]["keyword"]["rank"] == 1
    assert doc.metadata["score"] > 0


def test_the_tag_and_kind_fields_prefilter_recall(live):
    tagged = MinisphereRetriever(workspace=live.ws, tag="db", top_k=10).invoke(QUERY)
    assert tagged and all("db" in d.metadata["tags"] for d in tagged)
    assert MinisphereRetriever(workspace=live.ws, kind="episodic").invoke(QUERY) == []


def test_per_call_options_override_the_fields(live):
    retriever = MinisphereRetriever(workspace=live.ws, top_k=5)
    assert len(retriever.invoke(QUERY, top_k=2)) == 2
    with pytest.raises(ValueError, match="unknown recall option"):
        retriever.invoke(QUERY, k=2)
    with pytest.raises(ValueError):
        retriever.invoke(QUERY, top_k=51)


def test_the_async_path_over_the_async_client(live):
    async def scenario():
        async with live.async_handle() as handle:
            retriever = MinisphereRetriever(workspace=handle, top_k=3)
            docs = await retriever.ainvoke(QUERY)
            tools = {t.name: t for t in minisphere_tools(handle)}
            captured = await tools["capture"].ainvoke({"content": "Async tools write too"})
            with pytest.raises(ValueError, match="asynchronous"):
                retriever.invoke(QUERY)
            return docs, captured

    docs, captured = asyncio.run(scenario())
    assert len(docs) == 3
    assert live.ws.get_entry(captured["id"]).content == "Async tools write too"


def test_a_tools_schema_is_the_engines_argument_model():
    tools = minisphere_tools(None, names=list(TOOL_ARGUMENTS))
    assert {t.name: t.args_schema for t in tools} == TOOL_ARGUMENTS
    assert [t.name for t in minisphere_tools(None)] == list(DEFAULT_TOOLS)


def test_a_bad_tool_call_is_refused_before_it_is_sent_and_a_refusal_is_the_services(live):
    tools = {t.name: t for t in minisphere_tools(live.ws)}
    with pytest.raises(ValueError):  # pydantic: topK is at most 50
        tools["recall"].invoke({"query": QUERY, "topK": 51})
    with pytest.raises(ServiceError) as missing:
        tools["getEntry"].invoke({"id": "00000000-0000-4000-8000-000000000000"})
    assert missing.value.status == 404
    handled = {t.name: t for t in minisphere_tools(live.ws, handle_tool_error=True)}
    assert (
        "404"
        in handled["getEntry"]
        .invoke(
            {
                "args": {"id": "00000000-0000-4000-8000-000000000000"},
                "name": "getEntry",
                "id": "call-1",
                "type": "tool_call",
            }
        )
        .content
    )


ADAPTERS_IN_USE = """
import json, sys
from minisphere.integrations.langchain import minisphere_tools
from minisphere.integrations.tool_specs import tool_definitions
tool_definitions("openai"); minisphere_tools(None)
print(json.dumps(sorted(sys.modules)))
"""


def test_using_the_adapters_loads_no_workspace_or_server_module():
    out = subprocess.run(
        [sys.executable, "-c", ADAPTERS_IN_USE],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    loaded = __import__("json").loads(out.stdout.strip().splitlines()[-1])
    server = [
        m
        for m in loaded
        if m.startswith(
            (
                "minisphere.engine.workspace",
                "minisphere.engine.methods",
                "minisphere.engine.reads",
                "minisphere.engine.writes",
                "minisphere.engine.retrieval",
                "minisphere.http",
                "minisphere.hosting",
                "minisphere.control",
                "minisphere.durability",
                "ray",
                "fastapi",
            )
        )
    ]
    assert server == []
