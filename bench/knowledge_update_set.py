"""The knowledge-update benchmark's generated set (bench_knowledge_updates.py): subjects whose
attribute changes two to four times over simulated weeks, each value in a sentence of its own
template, among unrelated chatter that names the same subjects. Seeded: a seed gives one set."""

from __future__ import annotations

import random
from dataclasses import dataclass

SUBJECTS_PER_KIND = 12
CHATTER_PER_WEEK = 40

NAMES = ["Alice", "Bruno", "Chiara", "Dmitri", "Esther", "Farid", "Greta", "Hiroshi", "Ines",
         "Jonas", "Kavya", "Lars", "Mei", "Nadia", "Oscar", "Priya", "Quentin", "Rosa", "Sven",
         "Tomasz", "Uma", "Viktor", "Wanda", "Yusuf", "Zofia"]  # fmt: skip
CITIES = ["Lisbon", "Denver", "Osaka", "Tallinn", "Porto", "Quito", "Bergen", "Leeds",
          "Hanoi", "Perth", "Krakow", "Austin", "Ghent", "Nairobi", "Turin", "Malmo"]  # fmt: skip
COMPANIES = ["Acme Freight", "Blue Heron Labs", "Copperleaf", "Driftwood Bank", "Evergreen Health",
             "Foxglove Games", "Granite Logistics", "Harbor Analytics", "Ironbark Energy",
             "Juniper Retail"]  # fmt: skip
TEAMS = ["payments", "search", "onboarding", "billing", "mobile", "platform", "growth", "data",
         "security", "support", "infra", "design"]  # fmt: skip
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
TIMES = ["9:00", "9:30", "10:00", "10:15", "11:00", "14:00", "15:30", "16:00"]
SERVICES = ["ledger", "checkout", "thumbnailer", "mailer", "scheduler", "indexer", "gateway",
            "notifier", "exporter", "tracker", "uploader", "reporter"]  # fmt: skip
REGIONS = ["us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-south-1", "ap-northeast-1",
           "sa-east-1", "ca-central-1"]  # fmt: skip
PROJECTS = ["Aurora", "Basalt", "Cobalt", "Dune", "Ember", "Fjord", "Glacier", "Helix", "Iris",
            "Juno", "Kestrel", "Lumen"]  # fmt: skip


@dataclass
class Attribute:
    """One kind of changing fact: its subjects, values, how it is first said, how a change is
    said, and how a question asks for the current value."""

    name: str
    subjects: list[str]
    values: list[str]
    first: list[str]
    change: list[str]
    questions: list[str]


ATTRIBUTES = [
    Attribute(
        "city",
        NAMES,
        CITIES,
        ["{s} lives in {v}.", "{s} has an apartment in {v} these days.", "Home for {s} is {v}."],
        [
            "{s} just moved to {v}.",
            "Update: {s} relocated to {v} last week.",
            "{s}'s new address is in {v}.",
            "{s} has settled in {v} now.",
            "Heads up, {s} is living in {v} from now on.",
        ],
        [
            "Where does {s} live now?",
            "Which city is {s} based in?",
            "What city does {s} live in these days?",
        ],
    ),
    Attribute(
        "employer",
        NAMES,
        COMPANIES,
        ["{s} works at {v}.", "{s} is employed by {v}.", "{s} has a job with {v}."],
        [
            "{s} changed jobs and joined {v}.",
            "{s} started a new role at {v} this month.",
            "{s} left for {v}.",
            "Since last week {s} has been working for {v}.",
            "{s} accepted an offer from {v}.",
        ],
        ["Where does {s} work now?", "Who is {s}'s employer?", "Which company does {s} work for?"],
    ),
    Attribute(
        "standup",
        TEAMS,
        [f"{d} at {t}" for d in DAYS for t in TIMES],
        [
            "The {s} team holds its standup on {v}.",
            "{s} standup: {v}, every week.",
            "The weekly {s} sync is {v}.",
        ],
        [
            "The {s} standup moved to {v}.",
            "From now on the {s} team meets {v}.",
            "Reminder: {s} standup is {v} starting this week.",
            "We shifted the {s} sync to {v}.",
            "New slot for the {s} standup: {v}.",
        ],
        [
            "When is the {s} standup now?",
            "What time does the {s} team meet for standup?",
            "When does the {s} team sync?",
        ],
    ),
    Attribute(
        "region",
        SERVICES,
        REGIONS,
        [
            "The {s} service deploys to {v}.",
            "{s} runs in region {v}.",
            "Production {s} lives in {v}.",
        ],
        [
            "{s} moved: {v} is the region now.",
            "We migrated the {s} service to {v}.",
            "The {s} deployment target changed to {v}.",
            "{s} is now served from {v}.",
            "Cut-over done, {s} runs in {v} from today.",
        ],
        [
            "Which region does the {s} service deploy to?",
            "Where does {s} run now?",
            "What region is {s} in?",
        ],
    ),
    Attribute(
        "lead",
        PROJECTS,
        NAMES,
        [
            "Project {s} is led by {v}.",
            "{v} is the lead on project {s}.",
            "{v} runs the {s} project.",
        ],
        [
            "{v} took over project {s}.",
            "Project {s} has a new lead: {v}.",
            "{v} is leading {s} from this sprint.",
            "Handover done, {s} now reports to {v}.",
            "{v} stepped in as the {s} lead.",
        ],
        ["Who leads project {s} now?", "Who is the lead on {s}?", "Who runs the {s} project?"],
    ),
]

CHATTER = [
    "Lunch at the {place} was {mood} today.", "{who} said the coffee machine is {mood} again.",
    "Reminder to water the plants on the {place} balcony.",
    "{who} shared a {mood} article about {topic}.", "The {place} printer jammed twice this morning.",
    "Book club picked a novel about {topic} for next month.",
    "{who} is out sick, hope they feel better.", "Parking near the {place} is {mood} this week.",
    "Someone left {topic} stickers on every desk.", "The {topic} meetup had a {mood} turnout.",
    "{who} recommends the {place} bakery for birthdays.",
    "Friday demo went {mood}, slides are in the shared drive.",
]  # fmt: skip
PLACES = ["canteen", "lobby", "north wing", "station", "corner cafe", "rooftop", "garage"]
MOODS = ["great", "terrible", "fine", "surprising", "quiet", "noisy", "excellent"]
TOPICS = ["sourdough", "chess", "cycling", "birdwatching", "jazz", "pottery", "astronomy"]


@dataclass
class Thread:
    """One subject's attribute over time: the statements in order (the last is current)."""

    attribute: str
    subject: str
    values: list[str]
    texts: list[str]
    weeks: list[int]
    question: str


def generate(rng: random.Random) -> tuple[list[Thread], list[tuple[int, str]]]:
    """The threads and the chatter, each statement with the week it is said in."""
    threads = []
    for attribute in ATTRIBUTES:
        for subject in rng.sample(attribute.subjects, SUBJECTS_PER_KIND):
            changes = rng.randint(2, 4)
            pool = [v for v in attribute.values if v != subject]
            values = rng.sample(pool, changes + 1)
            weeks = sorted(rng.sample(range(1, 16), changes + 1))
            texts = [rng.choice(attribute.first).format(s=subject, v=values[0])]
            for value in values[1:]:
                texts.append(rng.choice(attribute.change).format(s=subject, v=value))
            question = rng.choice(attribute.questions).format(s=subject)
            threads.append(Thread(attribute.name, subject, values, texts, weeks, question))
    chatter = []
    for week in range(1, 17):
        for _ in range(CHATTER_PER_WEEK):
            template = rng.choice(CHATTER)
            chatter.append(
                (
                    week,
                    template.format(
                        who=rng.choice(NAMES),
                        place=rng.choice(PLACES),
                        mood=rng.choice(MOODS),
                        topic=rng.choice(TOPICS),
                    ),
                )
            )
    return threads, chatter
