"""mkdocs hook (mkdocs.yml `hooks:`): the Benchmarks section lists one page per generated
result page, so a new file in bench/results/ needs no edit of mkdocs.yml."""

from __future__ import annotations

from pathlib import Path

SECTION = "Benchmarks"
RESULTS = "benchmarks/results"


def on_config(config):
    docs = Path(config["docs_dir"])
    pages = sorted(str(path.relative_to(docs)) for path in (docs / RESULTS).glob("*.md"))
    for item in config["nav"] or []:
        if isinstance(item, dict) and SECTION in item:
            item[SECTION] = [*item[SECTION], *pages]
    return config
