"""The documented volatility heuristic (minisphere/volatility.py) used when capture gets none."""
import pytest

from minisphere.engine.volatility import infer_volatility

CASES = [
    # volatile: live, right-now facts
    ("The API is down right now", "volatile"),
    ("At the moment the queue holds 40k jobs", "volatile"),
    ("Standup moved to 10:30 today", "volatile"),
    ("Deploy tonight after the freeze", "volatile"),
    ("The release build is currently failing on arm64", "volatile"),
    ("Migration in progress, do not touch the schema", "volatile"),
    ("ETA for the fix is Friday", "volatile"),
    ("Waiting for legal to approve the licence", "volatile"),
    ("The GPU node costs $2.40 per hour", "volatile"),
    ("Storage is billed at 30 EUR a month", "volatile"),
    # state: true for a while, then changes
    ("The team is currently five people", "state"),
    ("As of March the on-call rotation is weekly", "state"),
    ("This sprint we focus on search quality", "state"),
    ("The latest stable release is the one to deploy", "state"),
    ("The service runs version 3.4.1", "state"),
    ("Python 3.11 is the runtime", "state"),
    ("The default branch is now main", "state"),
    ("Feature flags stay on for now", "state"),
    ("The payment deadline is the 15th", "state"),
    ("The migration is temporarily paused", "state"),
    # durable: definitions, decisions, rules
    ("We use PostgreSQL as the system of record", "durable"),
    ("Alice owns the billing service", "durable"),
    ("All timestamps are stored in UTC", "durable"),
    ("Decided: no force pushes to shared branches", "durable"),
]


@pytest.mark.parametrize("text, expected", CASES)
def test_heuristic_classes(text, expected):
    assert infer_volatility(text) == expected


@pytest.mark.parametrize("text, expected", CASES[::4])
def test_capture_applies_the_heuristic(ws, text, expected):
    entry_id = ws.capture(text)["id"]
    assert ws.get_entry(entry_id)["volatility"] == expected


def test_volatile_beats_state_when_both_match():
    assert infer_volatility("Currently running v2.1 right now") == "volatile"


def test_words_inside_other_words_do_not_match():
    assert infer_volatility("The etalon is stillborn") == "durable"  # 'eta', 'still' are parts
