"""The site builds with `mkdocs build --strict` (a warning fails it: a broken link, a page
left out of the navigation, a missing snippet), loads nothing from outside its own files, and
every internal link and anchor of the built HTML resolves (a crawler over the files)."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

EXTERNAL = ("http:", "https:", "mailto:", "data:", "javascript:")
PAGES_WE_WROTE = (
    "index.html",
    "get-started/",
    "concepts/",
    "reference/",
    "operate/",
    "benchmarks/",
    "architecture/",
)


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.loaded: list[str] = []  # what the browser fetches on its own: scripts, styles

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        for name in ("href", "src"):
            if attrs.get(name):
                self.links.append(attrs[name])
        if tag in ("script", "img", "iframe") and attrs.get("src"):
            self.loaded.append(attrs["src"])
        if tag == "link" and attrs.get("rel") != ["canonical"] and attrs.get("href"):
            self.loaded.append(attrs["href"])


def parsed(path: Path) -> Links:
    links = Links()
    links.feed(path.read_text(encoding="utf-8"))
    return links


def target_of(page: Path, link: str, site: Path) -> tuple[Path, str]:
    parts = urlsplit(link)
    if not parts.path:
        path = page
    elif parts.path.startswith("/"):  # the 404 page links from the site's root
        path = (site / unquote(parts.path).lstrip("/")).resolve()
    else:
        path = (page.parent / unquote(parts.path)).resolve()
    if path.is_dir():
        path = path / "index.html"
    return path, unquote(parts.fragment)


def test_every_internal_link_and_anchor_of_the_built_site_resolves(site):
    html = sorted(site.rglob("*.html"))
    assert len(html) > 40
    ids = {path.resolve(): parsed(path).ids for path in html}
    broken = []
    for page in html:
        for link in parsed(page).links:
            if link.startswith(EXTERNAL) or (link.startswith("#") and len(link) == 1):
                continue
            target, anchor = target_of(page, link, site)
            if not target.exists():
                broken.append(f"{page.relative_to(site)}: {link} (no file)")
            elif anchor and target.suffix == ".html" and anchor not in ids[target.resolve()]:
                broken.append(f"{page.relative_to(site)}: {link} (no anchor)")
    assert broken == [], "\n".join(broken)


def test_the_pages_load_nothing_from_outside_the_site(site):
    outside = [
        f"{page.relative_to(site)}: {src}"
        for page in site.rglob("*.html")
        for src in parsed(page).loaded
        if src.startswith(EXTERNAL[:2]) or src.startswith("//")
    ]
    assert outside == []


def test_every_page_of_the_navigation_is_built(site):
    for folder in PAGES_WE_WROTE:
        assert (site / folder).exists(), folder
    assert (site / "benchmarks" / "results" / "engine" / "index.html").is_file()
    assert "We chose SQLite per workspace" in (
        site / "get-started" / "first-workspace" / "index.html"
    ).read_text(encoding="utf-8")


def test_every_snippet_marker_became_its_example(site):
    """A respaced marker (`--8 < --"x.py"`) is no longer a marker: the page shows it as text,
    and the strict build does not notice. Each marker in a page's source must be replaced by
    the example's own code in the built page."""
    docs = Path(__file__).resolve().parents[2] / "docs"
    unreplaced = []
    for source in docs.rglob("*.md"):
        text = source.read_text(encoding="utf-8")
        markers = re.findall(r'^--8\s*<\s*--\s*"([\w.]+)', text, re.MULTILINE)
        page = site / source.relative_to(docs).with_suffix("") / "index.html"
        if not markers or not page.exists():
            continue
        shown = html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))
        unreplaced += [
            f"{page.relative_to(site)}: {name}"
            for name in markers
            if re.search(r'8\s*<\s*--\s*"' + re.escape(name), shown)
        ]
    assert unreplaced == []
