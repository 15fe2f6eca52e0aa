"""Tool definitions for any LLM API (`minisphere tools`, `tool_specs`) and their dispatcher
(`call_tool`): the tools are the engine's workspace methods, each definition's schema accepts
an example call that the live service then answers, and what the schema refuses the service
refuses too."""

from __future__ import annotations

import asyncio
import json

import jsonschema
import pytest

from minisphere.client.exchange import ServiceError
from minisphere.client.workspace import TOOL_METHODS
from minisphere.contract.pins import load_surface
from minisphere.engine.methods import METHODS
from minisphere.integrations.tool_specs import TOOL_ARGUMENTS, tool_definitions, tool_schema
from tests.cli.conftest import cli  # noqa: F401  (the in-process `minisphere` runner)


def example_calls(ids: list[str]) -> dict[str, dict]:
    """One valid call of every tool on the seeded workspace, in the wire's names."""
    first, second, third, fourth, fifth = ids[:5]
    return {
        "recall": {"query": "sqlite", "topK": 2, "kind": "semantic", "hops": 2},
        "listRecent": {"n": 3, "tag": "db"},
        "getEntry": {"id": first},
        "connections": {"id": first},
        "graphView": {"seedIds": [first], "hops": 2},
        "getTags": {},
        "getCount": {},
        "getStats": {},
        "getBrief": {},
        "capture": {
            "content": "Tool calls are validated like RPCs",
            "tags": ["tools"],
            "claimTag": "INFERRED",
            "importance": 0.5,
        },
        "append": {"id": second, "addition": "Checked on every call."},
        "update": {"id": third, "content": "Snapshots are taken by the durability layer"},
        "setStatus": {"id": second, "status": "draft"},
        "link": {"src": third, "dst": fifth, "type": "relates_to"},
        "unlink": {"src": first, "dst": second, "type": "relates_to"},
        "forget": {"id": fourth},
    }


def test_the_tools_are_exactly_the_engines_workspace_methods():
    workspace_methods = {
        name: m.args for name, m in METHODS.items() if m.access in ("read", "write")
    }
    assert workspace_methods == TOOL_ARGUMENTS
    assert set(workspace_methods) == TOOL_METHODS


def test_every_tool_round_trips_from_its_definition_through_call_tool(live):
    calls = example_calls(live.ids)
    for definition in tool_definitions("openai"):
        name, schema = definition["function"]["name"], definition["function"]["parameters"]
        jsonschema.validate(calls[name], schema)
        # OpenAI hands arguments over as JSON text; the dispatcher takes that as it comes
        answer = live.ws.call_tool(name, json.dumps(calls[name]))
        assert isinstance(answer, dict), name
    assert live.ws.get_entry(live.ids[1]).status == "draft"  # the writes took effect
    assert live.ws.list_recent(tag="tools")[0].claim_tag == "INFERRED"
    with pytest.raises(ServiceError) as gone:
        live.ws.get_entry(live.ids[3])
    assert gone.value.status == 404


@pytest.mark.parametrize(
    "name,arguments",
    [
        ("recall", {"query": "x", "topK": 51}),
        ("recall", {"query": "x", "top": 3}),
        ("capture", {"content": "x", "importance": "high"}),
        ("link", {"src": "a", "dst": "b"}),
        ("setStatus", {"id": "x", "status": "archived"}),
    ],
)
def test_what_a_schema_refuses_the_service_refuses(live, name, arguments):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(arguments, tool_schema(name))
    with pytest.raises(ServiceError) as refused:
        live.ws.call_tool(name, arguments)
    assert (refused.value.status, refused.value.code) == (422, "invalid_argument")


def test_the_async_client_dispatches_tool_calls(live):
    async def scenario():
        async with live.async_handle() as handle:
            return await handle.call_tool("recall", {"query": "sqlite", "topK": 1})

    assert len(asyncio.run(scenario())["items"]) == 1


@pytest.mark.parametrize("arguments", ["[1, 2]", "{not json", 7])
def test_call_tool_refuses_arguments_that_are_not_a_json_object(live, arguments):
    with pytest.raises(ValueError, match="recall"):
        live.ws.call_tool("recall", arguments)


def test_call_tool_refuses_a_method_that_is_no_tool(live):
    with pytest.raises(ValueError, match="no tool 'runStalenessPass'"):
        live.ws.call_tool("runStalenessPass", {})


@pytest.mark.parametrize(
    "fmt,schema_at",
    [
        ("openai", lambda d: d["function"]["parameters"]),
        ("anthropic", lambda d: d["input_schema"]),
        ("json-schema", lambda d: {k: v for k, v in d.items() if k != "$schema"}),
    ],
)
def test_the_command_prints_every_tool_with_the_contracts_descriptions(
    cli,  # noqa: F811 - the fixture, imported for this module
    fmt,
    schema_at,
):
    ran = cli("tools", "--format", fmt)
    assert ran.code == 0, ran.err
    printed = ran.json()
    summaries = {name: m["summary"] for name, m in load_surface()["methods"].items()}
    names = [d.get("name") or d.get("title") or d["function"]["name"] for d in printed]
    assert names == list(TOOL_ARGUMENTS)
    for name, definition in zip(names, printed):
        description = definition.get("description") or definition["function"]["description"]
        assert description.startswith(summaries[name])
        jsonschema.Draft202012Validator.check_schema(schema_at(definition))
        assert schema_at(definition)["additionalProperties"] is False


def test_the_command_can_print_only_the_methods_asked_for(cli):  # noqa: F811
    ran = cli("tools", "--format", "anthropic", "--method", "recall", "--method", "forget")
    assert [d["name"] for d in ran.json()] == ["recall", "forget"]
    recall = ran.json()[0]["input_schema"]["properties"]
    assert recall["hops"]["description"] == "graph expansion depth from the keyword seeds"
    assert "title" not in recall["topK"]


def test_an_unknown_format_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown format 'gemini'"):
        tool_definitions("gemini")
