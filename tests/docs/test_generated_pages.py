"""Generated pages cannot drift: each committed page equals what `python -m docs.generate`
makes now, and every setting, route, command, metric, error code and benchmark result is in
its page (found here by means other than the generator's own, so a generator that skipped
something would fail too)."""

from __future__ import annotations

import re

from docs.generate import DOCS, ROOT, pages, stale_pages
from docs.generate.cli import commands
from docs.generate.http_api import served_document
from minisphere.settings import CLIENT_ENV_VARS, ENV_VARS


def page(path: str) -> str:
    return (DOCS / path).read_text(encoding="utf-8")


def test_every_generated_page_is_what_the_generator_makes_now():
    assert stale_pages() == [], "run `python -m docs.generate` and commit the pages"


def test_the_generator_makes_the_same_pages_twice():
    assert pages() == pages()


def test_every_setting_is_on_the_settings_page():
    text = page("operate/settings.md")
    assert [var.name for var in ENV_VARS + CLIENT_ENV_VARS if f"`{var.name}`" not in text] == []


def test_every_served_route_is_in_the_http_reference():
    text = page("reference/http-api.md")
    routes = [
        f"`{method.upper()} {path}`"
        for path, methods in served_document()["paths"].items()
        for method in methods
    ]
    assert len(routes) > 30
    assert [route for route in routes if route not in text] == []


def test_every_command_and_sub_command_is_in_the_cli_reference():
    from minisphere.cli.main import build_parser

    text = page("reference/cli.md")
    progs = [prog for prog, _ in commands(build_parser())]
    assert {"minisphere ws create", "minisphere token revoke", "minisphere contracts pin"} <= set(
        progs
    )
    assert [prog for prog in progs if f"## `{prog}`" not in text] == []


def test_every_metric_the_ingress_defines_is_on_the_metrics_page():
    source = (ROOT / "actors" / "ingress" / "metrics.py").read_text(encoding="utf-8")
    defined = re.findall(r"metrics\.(?:Counter|Gauge|Histogram)\(\s*\"(\w+)\"", source)
    assert len(defined) >= 5
    text = page("operate/metrics.md")
    assert [name for name in defined if f"`ray_{name}`" not in text] == []


def test_every_error_code_is_on_the_error_codes_page():
    source = (ROOT / "minisphere" / "errors.py").read_text(encoding="utf-8")
    codes = set(re.findall(r'^    code = "(\w+)"', source, re.MULTILINE))
    assert {"overloaded", "insufficient_scope", "snapshot_corrupt"} <= codes
    text = page("reference/errors.md")
    assert sorted(code for code in codes if f"`{code}`" not in text) == []


def test_every_benchmark_result_has_its_page():
    results = sorted(path.name for path in (ROOT / "bench" / "results").glob("*.md"))
    assert results
    assert [
        name for name in results if not (DOCS / "benchmarks" / "results" / name).is_file()
    ] == []


def test_a_page_edited_by_hand_is_reported_stale(monkeypatch):
    from docs import generate

    made = pages()
    path = "reference/errors.md"
    monkeypatch.setattr(generate, "pages", lambda: {**made, path: made[path] + "edited\n"})
    assert path in generate.stale_pages()
