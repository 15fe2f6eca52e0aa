"""The contract's tools as MCP tools, made from `minisphere.contract.tools` (the catalogue
`minisphere tools` prints) and the answer models the published OpenAPI document uses: each
tool's input schema is its argument model's, its output schema its answer model's (the
structured content of a call is the service's own JSON answer), and its annotations say what
calling it does. A write takes one more argument, `idempotencyKey`: the Idempotency-Key of the
RPC route, so a client may send the same write again safely.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from typing import Any

import mcp_types as types
from pydantic import TypeAdapter

from minisphere.contract.tools import TOOL_ARGUMENTS, tool_description, tool_schema, without_titles
from minisphere.engine.idempotency import check_key
from minisphere.engine.methods import METHODS
from minisphere.errors import MalformedRequest
from minisphere.http.handling import IDEMPOTENCY_KEY_PROMISE, IDEMPOTENCY_KEY_SCHEMA

IDEMPOTENCY_ARGUMENT = "idempotencyKey"
COMPACT_JSON = (",", ":")
IDEMPOTENCY_ARGUMENT_SCHEMA = {
    **IDEMPOTENCY_KEY_SCHEMA,
    "description": IDEMPOTENCY_KEY_PROMISE + ".",
}
# Writes that remove what they name: no revision keeps it.
DESTRUCTIVE = frozenset({"forget", "unlink"})
# Writes whose repeat with the same arguments changes nothing more (a second forget is refused
# with not_found, a second link updates the edge to what it already is). A repeated update of
# the same words confirms the entry, and append, capture add again: not idempotent.
IDEMPOTENT_WRITES = frozenset({"setStatus", "forget", "link", "unlink"})
TITLES = {
    "recall": "Recall",
    "listRecent": "List recent entries",
    "getEntry": "Get an entry",
    "connections": "Connections of an entry",
    "graphView": "Graph around entries",
    "getTags": "Tags",
    "getCount": "Entry count",
    "getStats": "Statistics",
    "getBrief": "Workspace brief",
    "capture": "Capture",
    "append": "Append to an entry",
    "update": "Update an entry",
    "setStatus": "Set an entry's status",
    "forget": "Forget an entry",
    "link": "Link two entries",
    "unlink": "Unlink two entries",
}


def is_read(name: str) -> bool:
    return METHODS[name].access == "read"


def tool_annotations(name: str) -> types.ToolAnnotations:
    if is_read(name):
        return types.ToolAnnotations(title=TITLES[name], read_only_hint=True, open_world_hint=False)
    return types.ToolAnnotations(
        title=TITLES[name],
        read_only_hint=False,
        destructive_hint=name in DESTRUCTIVE,
        idempotent_hint=name in IDEMPOTENT_WRITES,
        open_world_hint=False,
    )


def input_schema(name: str) -> dict[str, Any]:
    schema = tool_schema(name)
    if not is_read(name):
        schema = copy.deepcopy(schema)
        schema["properties"][IDEMPOTENCY_ARGUMENT] = dict(IDEMPOTENCY_ARGUMENT_SCHEMA)
    return schema


def output_schema(name: str) -> dict[str, Any]:
    answer = TypeAdapter(METHODS[name].answer)
    schema: dict[str, Any] = without_titles(answer.json_schema(mode="serialization"))
    return schema


@lru_cache(maxsize=1)
def all_tools() -> tuple[types.Tool, ...]:
    """Every tool, reads first, in the catalogue's order (made once: the schemas are fixed)."""
    return tuple(
        types.Tool(
            name=name,
            title=TITLES[name],
            description=tool_description(name),
            input_schema=input_schema(name),
            output_schema=output_schema(name),
            annotations=tool_annotations(name),
        )
        for name in TOOL_ARGUMENTS
    )


def tools_for(can_write: bool) -> list[types.Tool]:
    """The tools a token may call: a read-scoped token is shown the reads only."""
    return [tool for tool in all_tools() if can_write or is_read(tool.name)]


def split_arguments(
    name: str, arguments: dict[str, Any] | None
) -> tuple[dict[str, Any], str | None]:
    """(the method's arguments, the write's idempotency key or None); MalformedRequest for a
    key that is not one, or a key given to a read."""
    args = dict(arguments or {})
    key = args.pop(IDEMPOTENCY_ARGUMENT, None)
    if key is None:
        return args, None
    if is_read(name):
        raise MalformedRequest(f"{IDEMPOTENCY_ARGUMENT} is taken by writes only; {name} reads")
    return args, check_key(key)


def answer(result: Any) -> types.CallToolResult:
    """A call's answer: the service's JSON as structured content, and as (compact) text for
    clients that read only text."""
    text = json.dumps(result, separators=COMPACT_JSON)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=result
    )


def refusal(code: str, message: str) -> types.CallToolResult:
    """A refused call, as a tool result the model reads: the service's error body."""
    body = {"error": {"code": code, "message": message}}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(body))], is_error=True
    )
