"""The machine-readable contract surface and its agreement with the engine.

`contracts/<NAME>@<version>.surface.json` is the authority on what the service offers: every
method with its arguments, the enums, the edge types with their kind gates, and the limits.
This module reads the engine's own description of itself (the pydantic argument models in
`minisphere.engine.arguments`, the method table in `minisphere.engine.methods`, `KIND_GATES` in
`minisphere.engine.writes`, `minisphere.engine.constants`) into the same shape, and lists every difference
between the two. No Ray import.

Argument descriptors (both sides use this shape):

    {"name": "topK", "type": "integer", "required": false, "default": 10,
     "minimum": 1, "maximum": 50}

`name` is the wire (camelCase) name. `type` is a JSON type (string, integer, number, boolean,
array, object). Optional keys: `nullable` (null is accepted), `default` (only when not required),
`enum`, `items` (element type of an array), `minimum`, `maximum`, `exclusiveMinimum`,
`maxLength`, `minItems`, `maxItems`. `description` is prose in the surface file and is not
compared.
"""

from __future__ import annotations

from typing import Any, get_args

from pydantic import BaseModel

from minisphere.engine import constants as C
from minisphere.errors import MiniSphereError
from minisphere.wire import CaptureOutcome

# Keys of an argument descriptor that are prose, not contract terms.
DESCRIPTIVE_KEYS = frozenset({"description"})
_BOUND_KEYS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "maxLength",
    "minLength",
    "minItems",
    "maxItems",
)

# Surface limit name -> engine constant name (engine/constants.py). Both sides must agree.
LIMIT_CONSTANTS = {
    "maxContentBytes": "MAX_CONTENT_BYTES",
    "maxTagsPerEntry": "MAX_TAGS_PER_ENTRY",
    "maxTagChars": "MAX_TAG_CHARS",
    "maxSourceChars": "MAX_SOURCE_CHARS",
    "maxEvidenceRefChars": "MAX_EVIDENCE_REF_CHARS",
    "maxQueryChars": "MAX_QUERY_CHARS",
    "maxEdgeMetadataBytes": "MAX_METADATA_BYTES",
    "listRecentDefaultN": "LIST_RECENT_DEFAULT_N",
    "listRecentMaxN": "LIST_RECENT_MAX_N",
    "getTagsDefaultLimit": "GET_TAGS_DEFAULT_LIMIT",
    "getTagsMaxLimit": "GET_TAGS_MAX_LIMIT",
    "graphMaxHops": "GRAPH_MAX_HOPS",
    "graphViewDefaultHops": "GRAPH_VIEW_DEFAULT_HOPS",
    "graphViewMaxNodes": "GRAPH_VIEW_MAX_NODES",
    "graphViewFanoutPerNode": "GRAPH_VIEW_FANOUT_PER_NODE",
    "connectionsMaxEdges": "CONNECTIONS_MAX_EDGES",
    "recallDefaultTopK": "RECALL_DEFAULT_TOP_K",
    "recallMaxTopK": "RECALL_MAX_TOP_K",
    "recallDefaultHops": "RECALL_DEFAULT_HOPS",
}

# Surface enum name -> the Literal type in minisphere.engine.arguments that defines it.
ENUM_TYPES = {
    "status": "Status",
    "kind": "Kind",
    "volatility": "Volatility",
    "provenance": "Provenance",
    "claimTag": "ClaimTag",
    "edgeType": "EdgeType",
}


def _describe_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """One pydantic JSON-schema property -> the descriptor fields that carry contract terms."""
    out: dict[str, Any] = {}
    variants = schema.get("anyOf")
    if variants:
        non_null = [v for v in variants if v.get("type") != "null"]
        if len(non_null) != len(variants):
            out["nullable"] = True
        if len(non_null) != 1:
            raise ValueError(f"cannot describe a union argument: {schema}")
        inner = non_null[0]
    else:
        inner = schema
    out["type"] = inner["type"]
    if "enum" in inner:
        out["enum"] = list(inner["enum"])
    if inner["type"] == "array" and "items" in inner:
        items = inner["items"]
        out["items"] = items.get("type", "any")
        if "enum" in items:
            out["itemsEnum"] = list(items["enum"])
    for key in _BOUND_KEYS:
        if key in inner:
            out[key] = inner[key]
    return out


def describe_model(model: type[BaseModel]) -> list[dict[str, Any]]:
    """The wire-level arguments of one pydantic argument model, in declaration order."""
    schema = model.model_json_schema(by_alias=True)
    required = set(schema.get("required", ()))
    args: list[dict[str, Any]] = []
    for name, prop in schema.get("properties", {}).items():
        arg: dict[str, Any] = {"name": name, "required": name in required}
        arg.update(_describe_schema(prop))
        if name not in required:
            arg["default"] = prop.get("default")
        args.append(arg)
    return args


def describe_engine() -> dict[str, Any]:
    """The engine's own surface in the surface-file shape (methods, enums, edge types, limits)."""
    from minisphere.engine import arguments as inputs
    from minisphere.engine import methods as surface
    from minisphere.engine import writes

    methods: dict[str, dict[str, Any]] = {}
    for name, method in surface.METHODS.items():
        methods[name] = {
            "access": method.access,
            "positional": list(method.positional),
            "args": describe_model(method.args),
        }
    enums = {
        key: list(get_args(getattr(inputs, type_name))) for key, type_name in ENUM_TYPES.items()
    }
    edge_types: list[dict[str, Any]] = []
    for edge_type in inputs.EDGE_TYPES:
        src_episodic, dst_episodic = writes.KIND_GATES.get(edge_type, (False, False))
        edge_types.append(
            {
                "name": edge_type,
                "symmetric": edge_type == "relates_to",
                "kindGate": {
                    "src": "episodic" if src_episodic else None,
                    "dst": "episodic" if dst_episodic else None,
                },
            }
        )
    limits = {key: getattr(C, const) for key, const in LIMIT_CONSTANTS.items()}
    return {
        "methods": methods,
        "enums": enums,
        "edgeTypes": edge_types,
        "limits": limits,
        "captureOutcomes": list(get_args(CaptureOutcome)),
        "errorCodes": sorted(error_codes()),
    }


def error_codes() -> set[str]:
    """The code of every named error (minisphere.errors)."""
    found: set[str] = set()
    todo: list[type[MiniSphereError]] = [MiniSphereError]
    while todo:
        cls = todo.pop()
        found.add(cls.code)
        todo.extend(cls.__subclasses__())
    return found


def _strip(arg: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in arg.items() if k not in DESCRIPTIVE_KEYS}


def _same_number(a: Any, b: Any) -> bool:
    # 0 and 0.0 are the same bound/default; True is not 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    same: bool = a == b  # JSON values: == answers a bool
    return same


def _arg_differences(
    method: str, contract_args: list[dict[str, Any]], engine_args: list[dict[str, Any]]
) -> list[str]:
    problems = []
    contract_by_name = {a["name"]: _strip(a) for a in contract_args}
    engine_by_name = {a["name"]: a for a in engine_args}
    for name in contract_by_name.keys() - engine_by_name.keys():
        problems.append(f"{method}: contract argument {name!r} is not accepted by the engine")
    for name in engine_by_name.keys() - contract_by_name.keys():
        problems.append(
            f"{method}: engine accepts argument {name!r} that the contract does not describe"
        )
    for name in contract_by_name.keys() & engine_by_name.keys():
        want, have = contract_by_name[name], engine_by_name[name]
        for key in sorted(want.keys() | have.keys()):
            if key == "name":
                continue
            a, b = want.get(key), have.get(key)
            if key == "nullable":
                a, b = bool(a), bool(b)
            if not _same_number(a, b):
                problems.append(
                    f"{method}.{name}: {key} is {a!r} in the contract, {b!r} in the engine"
                )
    return problems


def _method_differences(
    contract_methods: dict[str, Any], engine_methods: dict[str, Any]
) -> list[str]:
    problems: list[str] = []
    for name in sorted(contract_methods.keys() - engine_methods.keys()):
        problems.append(f"method {name!r} is in the contract but the engine does not implement it")
    for name in sorted(engine_methods.keys() - contract_methods.keys()):
        problems.append(
            f"method {name!r} is implemented by the engine but the contract does not describe it"
        )
    for name in sorted(contract_methods.keys() & engine_methods.keys()):
        spec, impl = contract_methods[name], engine_methods[name]
        group, access = spec.get("group"), impl["access"]
        if (group == "maintenance") != (access == "maintenance"):
            problems.append(f"{name}: contract group {group!r} but engine access {access!r}")
        elif group == "write" and access != "write":
            problems.append(
                f"{name}: the contract says it writes but the engine runs it as {access!r}"
            )
        elif group == "read" and access == "write" and not spec.get("sideEffects"):
            problems.append(
                f"{name}: a contract read that the engine runs as a write must "
                "declare its sideEffects"
            )
        if list(spec.get("positional", [])) != impl["positional"]:
            problems.append(
                f"{name}: positional parameters {spec.get('positional', [])} in the "
                f"contract, {impl['positional']} in the engine"
            )
        problems.extend(_arg_differences(name, spec.get("args", []), impl["args"]))
    return problems


def _vocabulary_differences(surface_doc: dict[str, Any], engine: dict[str, Any]) -> list[str]:
    """The enums, the edge types and the limits."""
    problems: list[str] = []
    contract_enums = surface_doc.get("enums", {})
    for key, values in engine["enums"].items():
        if contract_enums.get(key) != values:
            problems.append(
                f"enum {key}: {contract_enums.get(key)!r} in the contract, {values!r} in the engine"
            )
    for key in contract_enums.keys() - engine["enums"].keys():
        problems.append(f"enum {key} is in the contract but not known to the engine")

    contract_edges = {e["name"]: e for e in surface_doc.get("edgeTypes", [])}
    engine_edges = {e["name"]: e for e in engine["edgeTypes"]}
    if list(contract_edges) != list(engine_edges):
        problems.append(
            f"edge types {list(contract_edges)} in the contract, {list(engine_edges)} in the engine"
        )
    for name in contract_edges.keys() & engine_edges.keys():
        for key in ("symmetric", "kindGate"):
            if contract_edges[name].get(key) != engine_edges[name][key]:
                problems.append(
                    f"edge type {name}: {key} is {contract_edges[name].get(key)!r} "
                    f"in the contract, {engine_edges[name][key]!r} in the engine"
                )

    outcomes = surface_doc.get("captureOutcomes")
    if outcomes != engine["captureOutcomes"]:
        problems.append(
            f"capture outcomes {outcomes!r} in the contract, {engine['captureOutcomes']!r} in "
            "the engine"
        )
    for code in surface_doc.get("errors", []):
        if code not in engine["errorCodes"]:
            problems.append(f"error {code!r} is in the contract but no error has that code")

    contract_limits = surface_doc.get("limits", {})
    for key, value in engine["limits"].items():
        if key not in contract_limits:
            problems.append(f"limit {key} is missing from the contract")
        elif not _same_number(contract_limits[key], value):
            problems.append(
                f"limit {key}: {contract_limits[key]!r} in the contract, {value!r} in the engine"
            )
    return problems


def differences(surface_doc: dict[str, Any], engine: dict[str, Any] | None = None) -> list[str]:
    """Every way the engine disagrees with the surface document (empty list = agreement).

    Compared: the method set, each method's group against the engine's access class,
    positional parameters, argument names, types, required-ness, defaults, enums and bounds;
    the enum vocabularies; the edge types with symmetry and kind gates; the limits; the capture
    outcomes; that every listed error code exists.
    """
    engine = engine if engine is not None else describe_engine()
    return _method_differences(
        surface_doc.get("methods", {}), engine["methods"]
    ) + _vocabulary_differences(surface_doc, engine)
