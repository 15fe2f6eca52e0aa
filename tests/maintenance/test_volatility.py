"""The volatility heuristic's documented table (minisphere/volatility.py), pinned row by row:
each signal of the docstring, the precedence (volatile > state > durable), and capture applying
it only when the caller gave no volatility."""
import pytest

from minisphere.engine import constants as C
from minisphere.engine.volatility import infer_volatility

TABLE = [
    # volatile: right now / at the moment / today / tonight / this morning|afternoon|evening
    ("The API is down right now", "volatile"),
    ("At the moment we have two replicas", "volatile"),
    ("The office is closed today", "volatile"),
    ("Deploy tonight after the freeze", "volatile"),
    ("Standup moved this afternoon", "volatile"),
    # volatile: currently running|down|failing|blocked..., in progress, ETA, waiting for|on
    ("The nightly job is currently running", "volatile"),
    ("Checkout is currently down in EU", "volatile"),
    ("Reindex in progress on shard 4", "volatile"),
    ("ETA for the fix: Friday", "volatile"),
    ("Waiting on the vendor for a key", "volatile"),
    # volatile: prices
    ("A seat costs $12 a month", "volatile"),
    ("The GPU node is 2.40 USD per hour", "volatile"),
    ("Storage is billed at €30", "volatile"),
    # state: currently / as of / this week|month|quarter|sprint|year / latest / status
    ("Bob is currently the on-call lead", "state"),
    ("As of June the API is rate limited", "state"),
    ("This quarter we focus on search", "state"),
    ("The latest build is green", "state"),
    ("Project status: at risk", "state"),
    # state: version numbers, is now, for now, still, deadlines, until, temporary
    ("The service runs v2.3", "state"),
    ("We pin numpy 2.1.3", "state"),
    ("The default branch is now main", "state"),
    ("Keep the flag off for now", "state"),
    ("The old endpoint still answers", "state"),
    ("The deadline for the audit is March 3", "state"),
    ("Writes are frozen until the migration ends", "state"),
    ("The replica is temporarily read-only", "state"),
    # durable: definitions, decisions, rules, names, anything else
    ("A workspace is one agent's private memory", "durable"),
    ("Decided: we never force-push to main", "durable"),
    ("All timestamps are stored in UTC", "durable"),
    ("Alice owns the billing service", "durable"),
]


@pytest.mark.parametrize("text, expected", TABLE)
def test_documented_table(text, expected):
    assert infer_volatility(text) == expected


def test_volatile_wins_over_state():
    assert infer_volatility("As of today the latest release is v3.1") == "volatile"


def test_matching_is_case_insensitive_and_whole_word():
    assert infer_volatility("RIGHT NOW the queue is empty") == "volatile"
    assert infer_volatility("The etalon of stillness") == "durable"


def test_capture_infers_only_when_volatility_is_missing(ws):
    inferred = ws.capture("The nightly job is currently running")["id"]
    given = ws.capture("The nightly job is currently running late", volatility="durable")["id"]
    assert ws.get_entry(inferred)["volatility"] == "volatile"
    assert ws.get_entry(given)["volatility"] == "durable"
    assert ws.get_stats()["unclassified"] == 2       # kind was not given either


def test_inferred_class_sets_the_due_date(ws, clock):
    entry_id = ws.capture("The service runs v2.3")["id"]
    assert ws.get_entry(entry_id)["staleDueAt"] == clock.now_ms() + C.STALE_AFTER_MS["state"]
