"""The framework adapters against the live service (Ray + Serve), not the in-process app of
tests/integrations: over real HTTP (LangChain's retriever suite, a short run of the LangGraph
store's state machine, the LlamaIndex block) and over the in-cluster client, sync and async
(the retriever, tools, the store, the memory block). The in-cluster handles are what an agent
running on the cluster passes; nothing of the adapters is told which client it was given."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

import pytest

pytest.importorskip("langchain_tests")
pytest.importorskip("langgraph.store.memory")
pytest.importorskip("llama_index.core")

from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from actors.in_cluster import AsyncInClusterWorkspace, connect_in_cluster
from minisphere.client import AsyncClient, Client
from minisphere.integrations.langchain import (
    MinisphereRetriever,
    ToolServiceError,
    minisphere_tools,
)
from minisphere.integrations.langgraph import MinisphereStore
from tests.integrations.conftest import QUERY, seed_entries
from tests.integrations.test_langchain_standard import RetrieverSuite
from tests.integrations.test_langgraph_store import (
    ROUND_TRIP,
    StoreAgreement,
    check_round_trip,
)
from tests.integrations.test_llamaindex_memory import (
    RECALLED,
    aconverse,
    converse,
)

MISSING_ID = "00000000-0000-4000-8000-000000000000"
# a short run (~3 s here): each example is a workspace made and deleted on the service and
# each step a few HTTP calls; tests/integrations runs the long one in process
LIVE_MACHINE = settings(StoreAgreement.TestCase.settings, max_examples=3, stateful_step_count=10)


@dataclass
class ServiceWorkspace:
    id: str
    token: str
    namespace: str  # the Ray namespace the in-cluster client looks the directory up in
    http: object  # the sync handle over real HTTP

    def in_cluster(self):
        """The sync in-cluster handle, closed (its event-loop thread stopped) on leaving."""
        return contextlib.closing(connect_in_cluster(self.id, self.token, namespace=self.namespace))

    def async_in_cluster(self) -> AsyncInClusterWorkspace:
        return AsyncInClusterWorkspace(self.id, self.token, self.namespace)


@pytest.fixture(scope="module")
def admin(service):
    with Client(service["url"], admin_token=service["admin"]) as client:
        yield client


@contextlib.contextmanager
def service_workspace(admin, namespace: str):
    created = admin.create_workspace()
    workspace_id = created.workspace.id
    try:
        yield ServiceWorkspace(
            workspace_id, created.token, namespace, admin.workspace(workspace_id, created.token)
        )
    finally:
        admin.delete_workspace(workspace_id)


@pytest.fixture(scope="module")
def seeded(admin, service):
    """One workspace holding SEEDED for the module's reads (the retriever suites ask for 1
    and 3 results) and the tool calls, which write nothing a query for QUERY finds."""
    with service_workspace(admin, service["config"].namespace) as workspace:
        seed_entries(workspace.http)
        yield workspace


@pytest.fixture
def empty(admin, service):
    with service_workspace(admin, service["config"].namespace) as workspace:
        yield workspace


@pytest.fixture(scope="module")
def in_cluster(seeded):
    with seeded.in_cluster() as handle:
        yield handle


# ---- over real HTTP ----------------------------------------------------------------------------


class TestRetrieverSuiteOverRealHttp(RetrieverSuite):
    @pytest.fixture(autouse=True)
    def _workspace(self, seeded):
        self.handle = seeded.http


class LiveStoreAgreement(StoreAgreement):
    """The in-process machine, each run on a new workspace of the live service over HTTP."""

    def __init__(self, admin, namespace: str):
        super().__init__()
        self.admin, self.namespace = admin, namespace

    @contextlib.contextmanager
    def empty_workspace(self):
        with service_workspace(self.admin, self.namespace) as workspace:
            yield workspace.http


def test_the_store_over_real_http_answers_as_langgraphs_in_memory_store(admin, service):
    run_state_machine_as_test(
        lambda: LiveStoreAgreement(admin, service["config"].namespace), settings=LIVE_MACHINE
    )


# A workspace per conversation: the block's capture refuses an exact repeat of a turn, so a
# second run of the same conversation in one workspace would add nothing to recall.


def test_memory_block_over_real_http_recalls_a_flushed_turn_sync(empty):
    assert RECALLED in converse(empty.http, "http-sync")


def test_memory_block_over_real_http_recalls_a_flushed_turn_async(empty, service):
    async def scenario():
        async with AsyncClient(service["url"]) as client:
            return await aconverse(client.workspace(empty.id, empty.token), "http-async")

    assert RECALLED in asyncio.run(scenario())


# ---- over the in-cluster client ----------------------------------------------------------------


class TestRetrieverSuiteOverTheInClusterClient(RetrieverSuite):
    @pytest.fixture(autouse=True)
    def _workspace(self, in_cluster):
        self.handle = in_cluster


def _shape(documents) -> list:
    """What a Document carries apart from the score, which recall computes on every call."""
    return [
        (
            d.id,
            d.page_content,
            sorted(d.metadata),
            {k: v for k, v in d.metadata.items() if k not in ("score", "breakdown")},
        )
        for d in documents
    ]


def test_in_cluster_documents_carry_what_http_documents_carry_sync_and_async(seeded, in_cluster):
    over_http = MinisphereRetriever(workspace=seeded.http, top_k=5).invoke(QUERY)
    in_sync = MinisphereRetriever(workspace=in_cluster, top_k=5).invoke(QUERY)

    async def scenario():
        return await MinisphereRetriever(workspace=seeded.async_in_cluster(), top_k=5).ainvoke(
            QUERY
        )

    in_async = asyncio.run(scenario())
    assert len(over_http) == 5 and "breakdown" in over_http[0].metadata
    assert _shape(in_sync) == _shape(in_async) == _shape(over_http)


def test_in_cluster_tool_calls_answer_json_and_refusals_are_tool_errors_sync_and_async(
    seeded, in_cluster
):
    tools = {t.name: t for t in minisphere_tools(in_cluster)}
    captured = tools["capture"].invoke(
        {"content": "Agents on the cluster call tools too", "tags": ["in-cluster-tools"]}
    )
    assert captured["outcome"] == "stored"
    with pytest.raises(ToolServiceError) as missing:
        tools["getEntry"].invoke({"id": MISSING_ID})
    assert (missing.value.status, missing.value.code) == (404, "not_found")
    # the dispatcher of any LLM API's tool call, with the arguments as OpenAI sends them
    assert in_cluster.call_tool("getEntry", f'{{"id": "{captured["id"]}"}}')["id"] == captured["id"]

    async def scenario():
        handle = seeded.async_in_cluster()
        tools = {t.name: t for t in minisphere_tools(handle, handle_tool_error=True)}
        found = await tools["listRecent"].ainvoke({"tag": "in-cluster-tools"})
        refused = await tools["getEntry"].ainvoke(
            {"args": {"id": MISSING_ID}, "name": "getEntry", "id": "call-1", "type": "tool_call"}
        )
        return found, refused

    found, refused = asyncio.run(scenario())
    assert [e["id"] for e in found["items"]] == [captured["id"]]
    assert refused.status == "error" and "404" in refused.content


def test_in_cluster_store_puts_gets_searches_and_deletes_like_in_memory_store_sync(empty):
    with empty.in_cluster() as handle:
        check_round_trip(MinisphereStore(handle).batch(ROUND_TRIP))


def test_in_cluster_store_puts_gets_searches_and_deletes_like_in_memory_store_async(empty):
    async def scenario():
        return await MinisphereStore(empty.async_in_cluster()).abatch(ROUND_TRIP)

    check_round_trip(asyncio.run(scenario()))


def test_memory_block_over_the_in_cluster_client_recalls_a_flushed_turn_sync(empty):
    with empty.in_cluster() as handle:
        assert RECALLED in converse(handle, "in-cluster-sync")


def test_memory_block_over_the_in_cluster_client_recalls_a_flushed_turn_async(empty):
    assert RECALLED in asyncio.run(aconverse(empty.async_in_cluster(), "in-cluster-async"))


def test_an_async_in_cluster_handle_refuses_sync_calls_rather_than_leak_coroutines(seeded):
    async def scenario():
        handle = seeded.async_in_cluster()
        with pytest.raises(ValueError, match="asynchronous"):
            MinisphereRetriever(workspace=handle).invoke(QUERY)
        with pytest.raises(ValueError, match="asynchronous"):
            MinisphereStore(handle).get(("users",), "k")

    asyncio.run(scenario())
