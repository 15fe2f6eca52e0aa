"""Helpers of the retrieval tests (a plain module with a unique name, importable by the tests).

`NOW` is Monday 2026-11-30 15:00 UTC; `at(...)` builds epoch ms in UTC.
"""

from datetime import UTC, datetime


def at(year, month, day, hour=0, minute=0) -> int:
    return int(datetime(year, month, day, hour, minute, tzinfo=UTC).timestamp() * 1000)


NOW = at(2026, 11, 30, 15)  # a Monday
DAY_MS = 86_400_000

# Unrelated entries that give BM25 a real document-frequency baseline (idf > 0 for rare words).
FILLER = [
    "Lunch order for the team offsite is sandwiches and salad",
    "The office printer on floor three jams on glossy paper",
    "Quarterly planning meeting moved to the large conference room",
    "Garden club notes about tomatoes and the spring watering rota",
    "Holiday calendar for the support rotation in December",
    "Bicycle parking rules by the north entrance were updated",
    "The coffee machine descaling schedule is every second Friday",
    "Recipe for banana bread with walnuts and brown sugar",
]


def ids(result: dict) -> list[str]:
    return [item["id"] for item in result["items"]]


def by_id(result: dict) -> dict[str, dict]:
    return {item["id"]: item for item in result["items"]}


def entry_rows(ws) -> list[tuple]:
    """Every column of every entry (to prove a call changed nothing)."""
    return ws.conn.execute("SELECT * FROM entries ORDER BY seq").fetchall()
