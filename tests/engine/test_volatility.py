"""The volatility heuristic (minisphere/engine/volatility.py) capture uses when it is given no
volatility, pinned row by row: each signal of the module's docstring, the precedence
(volatile > state > durable), whole-word and case-insensitive matching, and capture applying
it (and the due date it implies) only when the caller gave no volatility."""

import pytest

from minisphere.engine import constants as C
from minisphere.engine.volatility import infer_volatility

TABLE = [
    # volatile: right now / at the moment / today / tonight / this morning|afternoon|evening
    ("The API is down right now", "volatile"),
    ("At the moment the queue holds 40k jobs", "volatile"),
    ("At the moment we have two replicas", "volatile"),
    ("Standup moved to 10:30 today", "volatile"),
    ("The office is closed today", "volatile"),
    ("Deploy tonight after the freeze", "volatile"),
    ("Standup moved this afternoon", "volatile"),
    # volatile: currently running|down|failing|blocked..., in progress, ETA, waiting for|on
    ("The release build is currently failing on arm64", "volatile"),
    ("The nightly job is currently running", "volatile"),
    ("Checkout is currently down in EU", "volatile"),
    ("Migration in progress, do not touch the schema", "volatile"),
    ("Reindex in progress on shard 4", "volatile"),
    ("ETA for the fix is Friday", "volatile"),
    ("ETA for the fix: Friday", "volatile"),
    ("Waiting for legal to approve the licence", "volatile"),
    ("Waiting on the vendor for a key", "volatile"),
    # volatile: prices
    ("The GPU node costs $2.40 per hour", "volatile"),
    ("The GPU node is 2.40 USD per hour", "volatile"),
    ("A seat costs $12 a month", "volatile"),
    ("Storage is billed at 30 EUR a month", "volatile"),
    ("Storage is billed at €30", "volatile"),
    # state: currently / as of / this week|month|quarter|sprint|year / latest / status
    ("The team is currently five people", "state"),
    ("Bob is currently the on-call lead", "state"),
    ("As of March the on-call rotation is weekly", "state"),
    ("As of June the API is rate limited", "state"),
    ("This sprint we focus on search quality", "state"),
    ("This quarter we focus on search", "state"),
    ("The latest stable release is the one to deploy", "state"),
    ("The latest build is green", "state"),
    ("Project status: at risk", "state"),
    # state: version numbers, is now, for now, still, deadlines, until, temporary
    ("The service runs version 3.4.1", "state"),
    ("The service runs v2.3", "state"),
    ("Python 3.11 is the runtime", "state"),
    ("We pin numpy 2.1.3", "state"),
    ("The default branch is now main", "state"),
    ("Feature flags stay on for now", "state"),
    ("Keep the flag off for now", "state"),
    ("The old endpoint still answers", "state"),
    ("The payment deadline is the 15th", "state"),
    ("The deadline for the audit is March 3", "state"),
    ("Writes are frozen until the migration ends", "state"),
    ("The migration is temporarily paused", "state"),
    ("The replica is temporarily read-only", "state"),
    # durable: definitions, decisions, rules, names, anything else
    ("We use PostgreSQL as the system of record", "durable"),
    ("A workspace is one agent's private memory", "durable"),
    ("Alice owns the billing service", "durable"),
    ("All timestamps are stored in UTC", "durable"),
    ("Decided: no force pushes to shared branches", "durable"),
    ("Decided: we never force-push to main", "durable"),
]


@pytest.mark.parametrize("text, expected", TABLE)
def test_documented_table(text, expected):
    assert infer_volatility(text) == expected


def test_capture_applies_the_heuristic_to_every_row(ws):
    ids = {text: ws.capture(text)["id"] for text, _ in TABLE}
    assert {text: ws.get_entry(entry_id)["volatility"] for text, entry_id in ids.items()} == dict(
        TABLE
    )


def test_volatile_wins_over_state():
    assert infer_volatility("Currently running v2.1 right now") == "volatile"
    assert infer_volatility("As of today the latest release is v3.1") == "volatile"


def test_matching_is_case_insensitive_and_whole_word():
    assert infer_volatility("RIGHT NOW the queue is empty") == "volatile"
    assert infer_volatility("The etalon is stillborn") == "durable"  # 'eta', 'still' are parts
    assert infer_volatility("The etalon of stillness") == "durable"


def test_capture_infers_only_when_volatility_is_missing(ws):
    inferred = ws.capture("The nightly job is currently running")["id"]
    given = ws.capture("The nightly job is currently running late", volatility="durable")["id"]
    assert ws.get_entry(inferred)["volatility"] == "volatile"
    assert ws.get_entry(given)["volatility"] == "durable"
    assert ws.get_stats()["unclassified"] == 2  # kind was not given either


def test_inferred_class_sets_the_due_date(ws, clock):
    entry_id = ws.capture("The service runs v2.3")["id"]
    assert ws.get_entry(entry_id)["staleDueAt"] == clock.now_ms() + C.STALE_AFTER_MS["state"]
