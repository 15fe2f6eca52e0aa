"""Small helpers the generated pages share: table cells and tables."""

from __future__ import annotations


def cell(text: object) -> str:
    """One table cell: on one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines)


def first_paragraph(doc: str | None) -> str:
    return " ".join((doc or "").strip().split("\n\n")[0].split())
