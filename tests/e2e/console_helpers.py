"""Helpers of the web console's browser tests: seeded workspace data and a headless Chromium.

`build_seed_file(path, entries)` writes a realistic workspace with the engine alone (no Ray):
projects with hub entries, people, episodic events in `follows` chains, decisions, incidents
and causes, documents, supersessions and `relates_to` pairs (all 8 edge types), revisions
(appends and updates), claim tags with evidence, and entries old enough to be stale. Its
timestamps end at the real "now", so the service judges staleness as it would for real data.
`seed_service(...)` exports that file as JSONL and imports it through the service's admin
import route (the same path `minisphere import` takes).

`chrome()` starts Debian's chromium through Debian's chromedriver (`/usr/bin/chromedriver`),
headless; selenium-manager is never asked for anything (no driver or browser download).
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from minisphere.engine.clock import ManualClock
from minisphere.engine.workspace import Workspace
from minisphere.transfer.export import export_file

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
DAY_MS = 86_400_000
SEED_SPAN_DAYS = 120
XSS_PROBE = (
    '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
    ' "quoted" & <b>bold</b> — the console must show this as text'
)

PROJECTS = [
    "atlas",
    "borealis",
    "cinder",
    "delta",
    "ember",
    "fjord",
    "granite",
    "harbor",
    "ionic",
    "juniper",
]
PEOPLE = [
    "Dana Ruiz",
    "Kenji Watanabe",
    "Amara Okafor",
    "Lukas Berg",
    "Priya Natarajan",
    "Tomás Silva",
]
SUBJECTS = [
    "the SQLite file",
    "the deploy pipeline",
    "the read replica",
    "the cache layer",
    "the billing export",
    "the auth service",
    "the message queue",
    "the nightly backup",
    "the snapshot store",
    "the search index",
    "the rate limiter",
    "the audit log",
    "the schema migration",
    "the ingress proxy",
    "the token rotation job",
]
FACTS = [
    "runs on two cores and stays under 40 percent CPU",
    "keeps seven days of history before compaction",
    "retries three times with exponential backoff",
    "is owned by the platform team",
    "needs a warm cache to answer within 20 ms",
    "writes with synchronous FULL so acknowledged writes survive a crash",
    "is deployed every Friday at noon",
    "pages the on-call engineer after five failures",
    "stores its data in the eu-west region",
    "was rewritten in Rust last quarter",
]
EVENTS = [
    "rolled out a new version of",
    "saw a latency spike in",
    "ran a failover drill on",
    "found a bug in",
    "doubled the capacity of",
    "paused the rollout of",
    "reviewed the design of",
    "migrated",
]
DECISIONS = [
    "to keep one SQLite file per workspace",
    "to move the queue to a managed service",
    "to snapshot every thousand writes",
    "to drop the legacy export format",
    "to cap graph views at fifty nodes",
    "to rotate tokens every ninety days",
]


@dataclass
class Seeded:
    """What the seed holds, for the tests to point at."""

    entries: int = 0
    edges: int = 0
    hubs: dict[str, str] = field(default_factory=dict)  # project -> hub entry id
    people: dict[str, str] = field(default_factory=dict)
    revised: str = ""  # an entry with several revisions (append + update)
    neighbour: str = ""  # an entry linked to `revised`
    stale: list[str] = field(default_factory=list)
    xss: str = ""
    lines: int = 0


def build_seed_file(
    path: Path, entries: int = 1000, *, now_ms: int | None = None, rng_seed: int = 17
) -> Seeded:
    """Write a workspace with about `entries` entries to the SQLite file at `path`."""
    rng = random.Random(rng_seed)
    end = int(time.time() * 1000) if now_ms is None else now_ms
    clock = ManualClock(end - SEED_SPAN_DAYS * DAY_MS)
    # captures, the appends of one entry in ten and the showcase's 6 days all fit before `end`
    step_ms = ((SEED_SPAN_DAYS - 8) * DAY_MS) // int(entries * 1.04 + 40)
    with Workspace(path, clock=clock, synchronous="OFF") as ws:
        seed = SeedWriter(ws, clock, step_ms, rng)
        seed.people_and_hubs()
        seed.showcase()
        seed.bulk(entries - seed.seeded.entries)
        seed.showcase_revisions()
        assert clock.now_ms() <= end, "the seed ran past now"
    return seed.seeded


class SeedWriter:
    """The seed's captures and links, `step_ms` apart on the clock and counted in `seeded`.
    Every draw comes from the one `rng`, in a fixed order, so a seed is the same each time."""

    def __init__(self, ws: Workspace, clock: ManualClock, step_ms: int, rng: random.Random):
        self.ws, self.clock, self.step_ms, self.rng = ws, clock, step_ms, rng
        self.seeded = Seeded()
        self.last_event: dict[str, str] = {}  # project -> its latest episodic entry
        self.decisions: list[str] = []
        self.facts: list[str] = []

    def capture(self, content: str, **options) -> str:
        self.clock.advance(ms=self.step_ms)
        answer = self.ws.capture(content, **options)
        assert answer["outcome"] == "stored", answer
        self.seeded.entries += 1
        return answer["id"]

    def link(self, src: str, dst: str, kind: str, **options) -> None:
        self.ws.link(src, dst, kind, **options)
        self.seeded.edges += 1

    def people_and_hubs(self) -> None:
        for name in PEOPLE:
            self.seeded.people[name] = self.capture(
                f"{name} is an engineer on the platform team; ask "
                f"{name.split()[0]} about on-call and capacity.",
                tags=["person"],
                kind="semantic",
                volatility="durable",
            )
        for project in PROJECTS:
            self.seeded.hubs[project] = self.capture(
                f"Project {project.title()}: the {self.rng.choice(SUBJECTS)[4:]} work stream, "
                f"led by {self.rng.choice(PEOPLE)}.",
                tags=[f"project:{project}", "hub"],
                kind="semantic",
                volatility="durable",
                importance=0.8,
            )

    def showcase(self) -> None:
        """The entry the tests revise, its neighbour, and the XSS probe."""
        seeded = self.seeded
        seeded.revised = self.capture(
            "We chose SQLite per workspace because each agent's memory is small and private.",
            tags=["design", "project:atlas"],
            kind="semantic",
            volatility="durable",
            claimTag="VERIFIED",
            evidenceRef="design-review-2026-07",
            importance=0.9,
        )
        seeded.neighbour = self.capture(
            "WAL lets readers run beside one writer, so recall never waits for a capture.",
            tags=["design", "sqlite"],
            kind="semantic",
            volatility="durable",
        )
        self.link(seeded.revised, seeded.neighbour, "relates_to")
        self.link(seeded.revised, seeded.hubs["atlas"], "part_of_project")
        seeded.xss = self.capture(
            XSS_PROBE, tags=["security-probe"], kind="semantic", volatility="durable"
        )

    def bulk(self, remaining: int) -> None:
        for index in range(max(0, remaining)):
            project = PROJECTS[index % len(PROJECTS)]
            entry, kind, text, volatility = self.bulk_entry(index, project)
            if volatility != "durable" and index < remaining * 0.6:
                self.seeded.stale.append(entry)
            self.bulk_links(index, entry, project, kind, text)
            if index % 10 == 0:  # revisions on one entry in ten
                self.clock.advance(ms=self.step_ms // 3)
                self.ws.append(entry, f"Follow-up {index}: confirmed by {self.rng.choice(PEOPLE)}.")

    def bulk_entry(self, index: int, project: str) -> tuple[str, str, str, str]:
        """(id, kind, text, volatility) of the index-th entry: an event, a decision or a fact."""
        rng = self.rng
        subject = rng.choice(SUBJECTS)
        roll = rng.random()
        volatility = "durable" if roll < 0.85 else "state" if roll < 0.95 else "volatile"
        tags = [f"project:{project}", subject.split()[-1]]
        if index % 3 == 0:
            text = (
                f"The team {rng.choice(EVENTS)} {subject} for {project.title()} (change {index})."
            )
            kind = "episodic"
        elif index % 11 == 0:
            text = f"We decided {rng.choice(DECISIONS)} in {project.title()} (note {index})."
            kind = "semantic"
        else:
            text = f"In {project.title()}, {subject} {rng.choice(FACTS)} (fact {index})."
            kind = "semantic"
        options = {
            "tags": tags,
            "kind": kind,
            "volatility": volatility,
            "importance": round(rng.random() * 0.6, 2),
        }
        if index % 7 == 0:
            options["claimTag"] = rng.choice(["VERIFIED", "INFERRED", "UNKNOWN"])
            options["evidenceRef"] = f"ticket-{1000 + index}"
        return self.capture(text, **options), kind, text, volatility

    def bulk_links(self, index: int, entry: str, project: str, kind: str, text: str) -> None:
        """Its hub, its event chain or decision, fact-to-fact edges, a person, a document."""
        rng, seeded = self.rng, self.seeded
        if index < 600:  # 60 per hub: its 1-hop view is 50 nodes + the hub
            self.link(
                entry,
                seeded.hubs[project],
                "part_of_project",
                weight=round(0.5 + rng.random() / 2, 2),
            )
        if kind == "episodic":
            if project in self.last_event:
                self.link(self.last_event[project], entry, "follows")
            self.last_event[project] = entry
            if self.decisions and index % 6 == 0:
                self.link(entry, rng.choice(self.decisions), "decided", provenance="inferred")
        elif "decided" in text:
            self.decisions.append(entry)
        else:
            self.fact_links(index, entry)
        if index % 9 == 0:
            self.link(entry, seeded.people[rng.choice(PEOPLE)], "about_person")
        if index % 29 == 0:
            self.link(entry, seeded.hubs[project], "document_of")

    def fact_links(self, index: int, entry: str) -> None:
        facts = self.facts
        facts.append(entry)
        if len(facts) > 5 and index % 5 == 0:
            self.link(entry, self.rng.choice(facts[:-1]), "relates_to", weight=0.6)
        if len(facts) > 5 and index % 13 == 0:
            self.link(entry, self.rng.choice(facts[:-1]), "supersedes")
        if len(facts) > 5 and index % 17 == 0:
            self.link(entry, self.rng.choice(facts[:-1]), "caused_by", provenance="system")

    def showcase_revisions(self) -> None:
        """The showcase entry: an append, an update and another append, days apart."""
        for change in ("append", "update", "append"):
            self.clock.advance(days=2)
            if change == "append":
                self.ws.append(
                    self.seeded.revised, "WAL mode lets recall read while one writer commits."
                )
            else:
                self.ws.update(
                    self.seeded.revised,
                    "We chose one SQLite file per workspace: each agent's "
                    "memory is small, private and easy to snapshot.",
                )
        self.link(self.seeded.neighbour, self.seeded.people["Dana Ruiz"], "about_person")


def seed_service(service, workspace_id: str, tmp_dir: Path, entries: int = 1000) -> Seeded:
    """Build the seed file, export it as JSONL and import it into `workspace_id` (which must
    exist) through the running service."""
    from minisphere.cli.main import main

    db_path = tmp_dir / "seed.db"
    seeded = build_seed_file(db_path, entries)
    export = tmp_dir / "seed.jsonl"
    with export.open("w", encoding="utf-8", newline="\n") as out:
        seeded.lines = export_file(db_path, out, now_ms=int(time.time() * 1000))
    with contextlib.redirect_stderr(io.StringIO()):  # the progress line
        code = main(
            [
                "import",
                workspace_id,
                str(export),
                "--url",
                service["url"],
                "--admin-token",
                service["admin"],
            ]
        )
    assert code == 0, "import of the seed failed"
    return seeded


# ---- the browser ----------------------------------------------------------------------------
def browser_available() -> str | None:
    """None when Chromium, its driver and selenium are there, else what is missing."""
    for binary in (CHROMIUM, CHROMEDRIVER):
        if not (Path(binary).exists() and os.access(binary, os.X_OK)):
            return f"{binary} is missing (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


def chrome(width: int = 1440, height: int = 960, download_dir: Path | None = None):
    """A headless Chromium driven by the system chromedriver (never downloaded)."""
    # selenium-manager must neither phone home nor fetch anything
    os.environ["SE_AVOID_STATS"] = "true"
    os.environ["SE_OFFLINE"] = "true"
    os.environ.pop("SE_MANAGER_PATH", None)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={width},{height}",
        "--disable-extensions",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--metrics-recording-only",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        "--lang=en-US",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    if download_dir is not None:
        options.add_experimental_option("prefs", {"download.default_directory": str(download_dir)})
    service = Service(executable_path=shutil.which(CHROMEDRIVER) or CHROMEDRIVER)
    return webdriver.Chrome(service=service, options=options)
