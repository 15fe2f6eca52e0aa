"""architecture/layers.md: the layer rules, from the import-linter contracts in
pyproject.toml (what `lint-imports` enforces in CI), with a picture of the layer stack."""

from __future__ import annotations

import tomllib

from docs.generate import ROOT, notice
from docs.generate.markdown import table


def contracts() -> list[dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["importlinter"]["contracts"]


def stack_picture(layers: list[str]) -> str:
    """The layers as boxes, highest first; `a | b` are siblings that may not import each
    other, `(x)` a layer that may be absent."""
    rows = [" ".join(f"[ {name.strip()} ]" for name in layer.split("|")) for layer in layers]
    width = max(len(row) for row in rows)
    lines = []
    for row in rows:
        lines += [row.center(width).rstrip(), "|".center(width).rstrip()]
    lines[-1] = "(each imports only what is below it)".center(width).rstrip()
    return "\n".join(lines)


def modules(names: list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


INTRODUCTION = (
    "`lint-imports` checks these contracts in CI before the tests "
    "(`[tool.importlinter]` in `pyproject.toml`): a broken rule fails the build. "
    "What import-linter cannot see (an `importlib.import_module`), "
    "`tests/test_import_boundaries.py` checks in a fresh interpreter. The layout "
    "these rules keep is described in [Architecture](index.md)."
)


def layers_lines(layered: list[dict]) -> list[str]:
    lines: list[str] = []
    for contract in layered:
        lines += [
            f"## {contract['name']}",
            "",
            "```text",
            stack_picture(contract["layers"]),
            "```",
            "",
        ]
    return lines


def forbidden_lines(forbidden: list[dict]) -> list[str]:
    rows = [
        [
            c["name"],
            modules(c["source_modules"]),
            modules(c["forbidden_modules"])
            + ("; indirect imports allowed" if c.get("allow_indirect_imports") else ""),
        ]
        for c in forbidden
    ]
    return ["## Forbidden imports", "", table(["rule", "modules", "may never import"], rows), ""]


def section_lines(title: str, header: list[str], rows: list[list[object]]) -> list[str]:
    """A titled table, or nothing when no contract of its kind exists."""
    return [f"## {title}", "", table(header, rows), ""] if rows else []


def pages() -> dict[str, str]:
    found = contracts()
    of_type = {kind: [c for c in found if c["type"] == kind] for kind in {c["type"] for c in found}}
    protected: list[list[object]] = [
        [c["name"], modules(c["protected_modules"]), modules(c["allowed_importers"])]
        for c in of_type.get("protected", [])
    ]
    independent: list[list[object]] = [
        [c["name"], modules(c["modules"]), modules(c.get("ignore_imports", []))]
        for c in of_type.get("independence", [])
    ]
    lines = [
        notice("the import-linter contracts in pyproject.toml"),
        "# Layer rules",
        "",
        INTRODUCTION,
        "",
        *layers_lines(of_type.get("layers", [])),
        *forbidden_lines(of_type.get("forbidden", [])),
        *section_lines("Protected modules", ["rule", "modules", "imported only by"], protected),
        *section_lines(
            "Independent packages",
            ["rule", "packages", "the only imports between them"],
            independent,
        ),
    ]
    return {"architecture/layers.md": "\n".join(lines).rstrip("\n") + "\n"}
