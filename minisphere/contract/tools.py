"""The contract's methods a workspace token may call, as tools: each one's argument model, its
JSON Schema and its description, generated from the engine's argument models and described by
the pinned contract surface (`contracts/`). Every tool surface is made from these: the LLM tool
definitions of `minisphere tools` (`minisphere.integrations.tool_specs`), the framework
adapters and the MCP server (`minisphere.http.mcp`).

Only the methods a workspace token may call are tools: `runStalenessPass` is the scheduler's
(admin token). The argument models are pydantic and the wire's literals only; nothing here
opens a workspace file.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

from minisphere.engine.arguments import (
    AppendArgs,
    Args,
    CaptureArgs,
    GetEntryArgs,
    GraphViewArgs,
    IdArgs,
    LinkArgs,
    ListRecentArgs,
    NoArgs,
    RecallArgs,
    SetStatusArgs,
    TagsArgs,
    UnlinkArgs,
    UpdateArgs,
)

# tool name (= contract method) -> the engine's argument model; tests/integrations checks this
# against the engine's method table, so a method added there cannot be forgotten here
TOOL_ARGUMENTS: dict[str, type[Args]] = {
    "recall": RecallArgs,
    "listRecent": ListRecentArgs,
    "getEntry": GetEntryArgs,
    "connections": IdArgs,
    "graphView": GraphViewArgs,
    "getTags": TagsArgs,
    "getCount": NoArgs,
    "getStats": NoArgs,
    "getBrief": NoArgs,
    "capture": CaptureArgs,
    "append": AppendArgs,
    "update": UpdateArgs,
    "setStatus": SetStatusArgs,
    "forget": IdArgs,
    "link": LinkArgs,
    "unlink": UnlinkArgs,
}
# the schema keys whose values are themselves schemas (or maps / lists of them)
_SUBSCHEMA_MAPS = ("properties", "$defs")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMAS = ("items", "additionalProperties", "not")


@lru_cache(maxsize=1)
def contract_surface() -> dict[str, Any]:
    """The active contract's surface, pins checked (found as `minisphere.contract.pins` finds
    it: MINISPHERE_CONTRACTS_DIR, the checkout, or the installed data files)."""
    from minisphere.contract.pins import load_surface

    return load_surface()


def without_titles(schema: Any) -> Any:
    """Pydantic titles every schema ("Top K"): noise in a prompt, dropped at every level."""
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if k != "title"}
    for key in _SUBSCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: without_titles(s) for name, s in out[key].items()}
    for key in _SUBSCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [without_titles(s) for s in out[key]]
    for key in _SUBSCHEMAS:
        if isinstance(out.get(key), dict):
            out[key] = without_titles(out[key])
    return out


def tool_schema(name: str, surface: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON Schema of one tool's arguments: the argument model's, by wire (camelCase)
    names, with the surface's notes as property descriptions."""
    model = tool_model(name)
    schema: dict[str, Any] = without_titles(copy.deepcopy(model.model_json_schema(by_alias=True)))
    schema.setdefault("properties", {})
    notes = {a["name"]: a.get("description") for a in _surface_method(name, surface)["args"]}
    for prop, sub in schema["properties"].items():
        if notes.get(prop):
            sub["description"] = notes[prop]
    return schema


def tool_description(name: str, surface: dict[str, Any] | None = None) -> str:
    method = _surface_method(name, surface)
    effects = "; ".join(method.get("sideEffects", []))
    summary: str = method["summary"]
    return summary + (f" Side effects: {effects}." if effects else "")


def tool_model(name: str) -> type[Args]:
    if name not in TOOL_ARGUMENTS:
        raise ValueError(f"no tool {name!r}; the tools are {', '.join(TOOL_ARGUMENTS)}")
    return TOOL_ARGUMENTS[name]


def _surface_method(name: str, surface: dict[str, Any] | None) -> dict[str, Any]:
    tool_model(name)
    methods = (surface if surface is not None else contract_surface())["methods"]
    if name not in methods:
        raise ValueError(f"the contract surface does not describe {name!r}")
    method: dict[str, Any] = methods[name]
    return method
