"""The contract's methods as tool definitions for an LLM API, generated from the engine's
argument models, so what a model is told it may send is exactly what the service validates.

    tool_definitions("openai")        # [{"type": "function", "function": {...}}, ...]
    tool_definitions("anthropic")     # [{"name", "description", "input_schema"}, ...]
    tool_definitions("json-schema")   # one JSON Schema document per tool

Names are the contract's method names; descriptions are the pinned surface's (`contracts/`):
the method's summary, and each argument's note where the surface has one. Only the methods a
workspace token may call are tools: `runStalenessPass` is the scheduler's (admin token).
A model's call comes back as `(name, arguments)`; `WorkspaceCalls.call_tool` sends it.

The argument models are imported from `minisphere.engine.arguments`, which is pydantic and the
wire's literals only; nothing here opens a workspace file.
"""
from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

from minisphere.engine.arguments import (
    AppendArgs,
    Args,
    CaptureArgs,
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
    "getEntry": IdArgs,
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
FORMATS = ("openai", "anthropic", "json-schema")
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
# the schema keys whose values are themselves schemas (or maps / lists of them)
_SUBSCHEMA_MAPS = ("properties", "$defs")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMAS = ("items", "additionalProperties", "not")


@lru_cache(maxsize=1)
def contract_surface() -> dict:
    """The active contract's surface, pins checked (found as `minisphere.contract.pins` finds
    it: MINISPHERE_CONTRACTS_DIR, the checkout, or the installed data files)."""
    from minisphere.contract.pins import load_surface
    return load_surface()


def _without_titles(schema: Any) -> Any:
    """Pydantic titles every schema ("Top K"): noise in a prompt, dropped at every level."""
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if k != "title"}
    for key in _SUBSCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: _without_titles(s) for name, s in out[key].items()}
    for key in _SUBSCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_without_titles(s) for s in out[key]]
    for key in _SUBSCHEMAS:
        if isinstance(out.get(key), dict):
            out[key] = _without_titles(out[key])
    return out


def tool_schema(name: str, surface: dict | None = None) -> dict:
    """The JSON Schema of one tool's arguments: the argument model's, by wire (camelCase)
    names, with the surface's notes as property descriptions."""
    model = _model(name)
    schema = _without_titles(copy.deepcopy(model.model_json_schema(by_alias=True)))
    schema.setdefault("properties", {})
    notes = {a["name"]: a.get("description") for a in _surface_method(name, surface)["args"]}
    for prop, sub in schema["properties"].items():
        if notes.get(prop):
            sub["description"] = notes[prop]
    return schema


def tool_description(name: str, surface: dict | None = None) -> str:
    method = _surface_method(name, surface)
    effects = "; ".join(method.get("sideEffects", []))
    return method["summary"] + (f" Side effects: {effects}." if effects else "")


def tool_definitions(fmt: str, names: list[str] | None = None,
                     surface: dict | None = None) -> list[dict]:
    """Every tool (or those named) in one API's format."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    return [_definition(fmt, name, tool_description(name, surface), tool_schema(name, surface))
            for name in (names if names is not None else list(TOOL_ARGUMENTS))]


def _definition(fmt: str, name: str, description: str, schema: dict) -> dict:
    if fmt == "openai":
        return {"type": "function",
                "function": {"name": name, "description": description, "parameters": schema}}
    if fmt == "anthropic":
        return {"name": name, "description": description, "input_schema": schema}
    return {"$schema": JSON_SCHEMA_DIALECT, "title": name, "description": description, **schema}


def _model(name: str) -> type[Args]:
    if name not in TOOL_ARGUMENTS:
        raise ValueError(f"no tool {name!r}; the tools are {', '.join(TOOL_ARGUMENTS)}")
    return TOOL_ARGUMENTS[name]


def _surface_method(name: str, surface: dict | None) -> dict:
    _model(name)
    methods = (surface if surface is not None else contract_surface())["methods"]
    if name not in methods:
        raise ValueError(f"the contract surface does not describe {name!r}")
    return methods[name]
