"""The examples in docs/examples/ run as written (each module's `main`, given a live workspace
or an admin client of the real app in process), so they cannot rot unnoticed; an example file
without a test here fails too."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from minisphere.client import Client
from tests.support.engine_gateway import (
    ADMIN_TOKEN,
    BASE_URL,
    EngineGateway,
    SyncASGITransport,
    engine_api,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def fresh_admin(tmp_path):
    """An admin client of the real app over empty engine files, in process."""
    gateway = EngineGateway(tmp_path)
    try:
        with Client(
            BASE_URL, admin_token=ADMIN_TOKEN, transport=SyncASGITransport(engine_api(gateway))
        ) as admin:
            yield admin
    finally:
        gateway.close()


def test_the_langchain_example_runs_its_tool_calls_and_retrieves(empty_live):
    pytest.importorskip("langchain_core")
    ran = example("langchain_example").main(empty_live.ws)
    capture, recall = ran["tool_messages"]
    assert capture.status == "success" and '"stored"' in capture.content
    assert "We chose SQLite per workspace" in recall.content
    assert [d.metadata["claim_tag"] for d in ran["documents"]] == ["VERIFIED"]
    assert ran["answer"] == "You chose SQLite per workspace for isolation."


def test_the_langgraph_example_puts_searches_and_deletes(empty_live):
    pytest.importorskip("langgraph.store.base")
    ran = example("langgraph_example").main(empty_live.ws)
    assert ran["alice_food"] == {"likes": "sushi, green tea, mochi", "spicy": 1}
    assert (("users", "alice"), "food") in {(i.namespace, i.key) for i in ran["found"]}
    assert ran["hot"] == [{"likes": "ramen", "spicy": 3}]
    assert ran["namespaces"] == [("users", "alice"), ("users", "bob")]
    assert ran["after_delete"] == [("users", "alice")]


def test_the_llamaindex_example_brings_a_flushed_turn_back(empty_live):
    pytest.importorskip("llama_index.core")
    ran = example("llamaindex_example").main(empty_live.ws)
    assert "Pixel and she likes tuna" in ran["messages"][0].content
    assert empty_live.ws.list_recent(tag="chat")


def test_the_quickstart_example_recalls_its_capture_with_a_breakdown(fresh_admin, capsys):
    ran = example("quickstart").main(fresh_admin)
    assert ran["best"].content.startswith("We chose SQLite per workspace")
    assert {"fused", "final"} <= set(ran["best"].breakdown)
    printed = capsys.readouterr().out
    assert "We chose SQLite per workspace" in printed and "final:" in printed


def test_every_example_file_is_run_by_a_test_here():
    source = Path(__file__).read_text(encoding="utf-8")
    files = sorted(path.stem for path in EXAMPLES.glob("*.py") if not path.stem.startswith("_"))
    assert files and [name for name in files if f'example("{name}")' not in source] == []
