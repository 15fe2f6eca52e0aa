"""reference/http-api.md: every route of the served OpenAPI document, its parameters, body,
answers and their schemas. The document is the one the service serves at /openapi.json: the
FastAPI app built in process (no Ray; the gateway is never called to describe the routes)."""

from __future__ import annotations

import json

from docs.generate import notice
from docs.generate.markdown import cell, table

PAGE = "reference/http-api.md"


def served_document() -> dict:
    from minisphere.http.app import build_api

    return build_api(object(), [], transfer=object()).openapi()


def schema_anchor(name: str) -> str:
    return f"schema-{name.lower()}"


def type_of(schema: dict) -> str:
    """A schema in a few words, with a link for a named one."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{schema_anchor(name)})"
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return " or ".join(f"`{json.dumps(value)}`" for value in schema["enum"])
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return " or ".join(type_of(part) for part in schema[key])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {type_of(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {type_of(schema['additionalProperties'])}"
    return str(kind)


def rules_of(schema: dict) -> str:
    """The bounds a value must keep: length, range, pattern, size."""
    rules = []
    for key, word in (
        ("minLength", "length ≥"),
        ("maxLength", "length ≤"),
        ("minimum", "≥"),
        ("maximum", "≤"),
        ("exclusiveMinimum", ">"),
        ("exclusiveMaximum", "<"),
        ("minItems", "items ≥"),
        ("maxItems", "items ≤"),
    ):
        if key in schema:
            rules.append(f"{word} {schema[key]}")
    if "pattern" in schema:
        rules.append(f"pattern `{schema['pattern']}`")
    for part in schema.get("anyOf", []):
        rules.append(rules_of(part))
    return "; ".join(rule for rule in rules if rule)


def description_of(schema: dict) -> str:
    parts = [schema.get("description", "")]
    parts += [part.get("description", "") for part in schema.get("anyOf", [])]
    return " ".join(part for part in parts if part)


def fields_table(schema: dict) -> str:
    required = set(schema.get("required", []))
    rows = []
    for name, prop in schema.get("properties", {}).items():
        default = f"`{json.dumps(prop['default'])}`" if "default" in prop else ""
        rows.append(
            [
                f"`{name}`",
                type_of(prop),
                "yes" if name in required else "",
                default,
                "; ".join(filter(None, [description_of(prop), rules_of(prop)])),
            ]
        )
    if not rows:
        return f"{type_of(schema)}; {rules_of(schema) or 'no fields'}"
    extra = "" if schema.get("additionalProperties") is False else "\n\nOther fields are accepted."
    return table(["field", "type", "required", "default", "rules"], rows) + extra


def parameters_lines(params: list[dict]) -> list[str]:
    if not params:
        return []
    rows = [
        [
            f"`{p['name']}`",
            p["in"],
            "yes" if p.get("required") else "",
            type_of(p["schema"]),
            "; ".join(filter(None, [p["schema"].get("description", ""), rules_of(p["schema"])])),
        ]
        for p in params
    ]
    return ["Parameters:", "", table(["name", "in", "required", "type", "rules"], rows), ""]


def body_lines(body: dict | None) -> list[str]:
    lines: list[str] = []
    for media, content in (body or {}).get("content", {}).items():
        schema = content.get("schema", {})
        title = schema.get("title", "")
        needed = "required" if body and body.get("required") else "optional"
        lines += [
            f"Body ({needed}, `{media}`{', ' + title if title else ''}):",
            "",
            fields_table(schema)
            if "properties" in schema or "$ref" not in schema
            else type_of(schema),
            "",
        ]
    return lines


def answers_lines(responses: dict) -> list[str]:
    answers, errors = [], []
    for status, answer in responses.items():
        schema = next(iter(answer.get("content", {}).values()), {}).get("schema", {})
        if status.startswith(("4", "5")) and schema.get("$ref", "").endswith("/ErrorBody"):
            errors.append(status)
        else:
            what = type_of(schema) if schema else "no body"
            answers.append(f"`{status}` {what}")
    listed = ", ".join(f"`{status}`" for status in sorted(errors))
    tail = f"; errors {listed} as [ErrorBody](#schema-errorbody)" if errors else ""
    lines = ["Answers: " + ", ".join(answers) + tail, ""]
    links = next(
        (answer.get("links") for answer in responses.values() if answer.get("links")), None
    )
    if links:
        described = (
            f"{name} ({cell(link.get('description', ''))})" for name, link in links.items()
        )
        lines += ["Links: " + "; ".join(described), ""]
    return lines


def operation_section(path: str, method: str, operation: dict) -> list[str]:
    lines = [f"### `{method.upper()} {path}`", "", operation.get("summary", ""), ""]
    if operation.get("description"):
        lines += [operation["description"].strip(), ""]
    return (
        lines
        + parameters_lines(operation.get("parameters", []))
        + body_lines(operation.get("requestBody"))
        + answers_lines(operation["responses"])
    )


def pages() -> dict[str, str]:
    document = served_document()
    groups: dict[str, list[tuple[str, str, dict]]] = {}
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            tag = (operation.get("tags") or ["other"])[0]
            groups.setdefault(tag, []).append((path, method, operation))
    info = document["info"]
    lines = [
        notice("the OpenAPI document the service serves (minisphere/http)"),
        "# HTTP API reference",
        "",
        f"{info['title']} {info['version']}, OpenAPI {document['openapi']}. "
        f"{info.get('description', '')}",
        "",
        "This page is made from the document a running service serves at "
        "`/openapi.json` (browsable at `/docs`). How the routes behave — limits, "
        "idempotency, retries, answer sizes — is in [HTTP API: how calls behave](http.md); "
        "the error codes in [Error codes](errors.md).",
        "",
        "## Routes",
        "",
    ]
    index = [
        [
            f"[`{method.upper()} {path}`](#{anchor_of(method, path)})",
            tag,
            cell(operation.get("summary", "")),
        ]
        for tag, operations in groups.items()
        for path, method, operation in operations
    ]
    lines += [table(["route", "group", "what"], index), ""]
    for tag, operations in groups.items():
        lines += [f"## {tag[0].upper()}{tag[1:]}", ""]
        for path, method, operation in operations:
            section = operation_section(path, method, operation)
            section[0] += f" {{ #{anchor_of(method, path)} }}"
            lines += section
    lines += ["## Schemas", ""]
    for name, schema in document["components"]["schemas"].items():
        lines += [f"### {name} {{ #{schema_anchor(name)} }}", ""]
        if schema.get("description"):
            lines += [" ".join(schema["description"].split()), ""]
        lines += [fields_table(schema), ""]
    return {PAGE: "\n".join(lines).rstrip("\n") + "\n"}


def anchor_of(method: str, path: str) -> str:
    slug = "".join(ch if ch.isalnum() else "-" for ch in path.lower()).strip("-")
    return f"{method.lower()}-{'-'.join(filter(None, slug.split('-')))}"
