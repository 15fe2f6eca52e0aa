"""LangChain's own published suites (langchain-tests) against a live workspace: the retriever
(`RetrieversIntegrationTests`) and every default tool (`ToolsUnitTests` and
`ToolsIntegrationTests`, one pair of classes per tool, generated below). The suites forbid
overriding their tests; only the constructor, its parameters and an example call are ours.
The module shares one seeded workspace; an example call of a tool that removes something
(forget, unlink) first makes what it removes, so every call of it is valid."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_tests")

from langchain_tests.integration_tests import (
    RetrieversIntegrationTests,
    ToolsIntegrationTests,
)
from langchain_tests.unit_tests import ToolsUnitTests

from minisphere.integrations.langchain import (
    DEFAULT_TOOLS,
    MinisphereRetriever,
    minisphere_tool,
)
from tests.integrations.conftest import ASYNC_SUITE, QUERY

pytestmark = ASYNC_SUITE


class RetrieverSuite(RetrieversIntegrationTests):
    """The retriever suite over `self.handle`, a workspace holding SEEDED: a subclass's autouse
    fixture sets it (here the in-process app's; tests/e2e, the live service's handles)."""

    pytestmark = ASYNC_SUITE  # its async test, in whichever module subclasses it
    handle: object

    @property
    def retriever_constructor(self):
        return MinisphereRetriever

    @property
    def retriever_constructor_params(self):
        return {"workspace": self.handle}

    @property
    def retriever_query_example(self) -> str:
        return QUERY

    @property
    def num_results_arg_name(self) -> str:
        return "top_k"


class TestRetrieverStandard(RetrieverSuite):
    @pytest.fixture(autouse=True)
    def _workspace(self, shared_live):
        self.handle = shared_live.ws


def example_arguments(name: str, live) -> dict:
    """A valid call of each tool on the seeded workspace."""
    first, second, third = live.ids[:3]
    if name == "forget":
        return {"id": scratch(live)}
    if name == "unlink":
        src, dst = scratch(live), scratch(live)
        live.ws.link(src, dst, "relates_to")
        return {"src": src, "dst": dst, "type": "relates_to"}
    return {
        "capture": {
            "content": "The ingress caches token hashes",
            "tags": ["auth"],
            "kind": "semantic",
            "claimTag": "VERIFIED",
            "evidenceRef": "adr-7",
        },
        "append": {"id": first, "addition": "It is opened with WAL.", "tags": ["wal"]},
        "update": {"id": first, "content": "SQLite keeps every workspace in its own file"},
        "setStatus": {"id": second, "status": "draft"},
        "link": {"src": second, "dst": third, "type": "relates_to", "weight": 0.5},
        "recall": {"query": QUERY, "topK": 3, "tag": "db"},
        "getEntry": {"id": first},
        "listRecent": {"n": 2},
        "connections": {"id": first},
        "getBrief": {},
    }[name]


def scratch(live) -> str:
    """A new entry to remove (the text differs each time: an exact duplicate is not stored)."""
    live.scratched += 1
    return live.ws.capture(f"Scratch note number {live.scratched}").id


class LiveTool:
    """What the generated classes share: the tool over the live workspace, an example call."""

    tool_name: str

    @pytest.fixture(autouse=True)
    def _workspace(self, shared_live):
        self.live = shared_live

    @property
    def tool_constructor(self):
        return minisphere_tool(self.live.ws, self.tool_name)

    @property
    def tool_invoke_params_example(self) -> dict:
        return example_arguments(self.tool_name, self.live)


for _name in DEFAULT_TOOLS:
    _title = _name[0].upper() + _name[1:]
    for _suite, _kind in ((ToolsUnitTests, "Unit"), (ToolsIntegrationTests, "Integration")):
        _class = f"Test{_title}Tool{_kind}"
        globals()[_class] = type(_class, (LiveTool, _suite), {"tool_name": _name})
