"""The contract's methods as tool definitions for an LLM API, generated from the engine's
argument models, so what a model is told it may send is exactly what the service validates.

    tool_definitions("openai")        # [{"type": "function", "function": {...}}, ...]
    tool_definitions("anthropic")     # [{"name", "description", "input_schema"}, ...]
    tool_definitions("json-schema")   # one JSON Schema document per tool

Names are the contract's method names; descriptions are the pinned surface's (`contracts/`):
the method's summary, and each argument's note where the surface has one. Only the methods a
workspace token may call are tools: `runStalenessPass` is the scheduler's (admin token).
A model's call comes back as `(name, arguments)`; `WorkspaceCalls.call_tool` sends it.

The tools themselves (argument models, schemas, descriptions) are `minisphere.contract.tools`'s,
the one catalogue every tool surface is made from; this module only writes them in each API's
format.
"""

from __future__ import annotations

from typing import Any

from minisphere.contract.tools import (
    TOOL_ARGUMENTS,
    contract_surface,
    tool_description,
    tool_schema,
)

__all__ = [
    "FORMATS",
    "TOOL_ARGUMENTS",
    "contract_surface",
    "tool_definitions",
    "tool_description",
    "tool_schema",
]

FORMATS = ("openai", "anthropic", "json-schema")
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def tool_definitions(
    fmt: str, names: list[str] | None = None, surface: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Every tool (or those named) in one API's format."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    return [
        _definition(fmt, name, tool_description(name, surface), tool_schema(name, surface))
        for name in (names if names is not None else list(TOOL_ARGUMENTS))
    ]


def _definition(fmt: str, name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    if fmt == "openai":
        return {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": schema},
        }
    if fmt == "anthropic":
        return {"name": name, "description": description, "input_schema": schema}
    return {"$schema": JSON_SCHEMA_DIALECT, "title": name, "description": description, **schema}
