"""Temporal query rewrite: phrases -> [since, until) created_at bounds, removed from the text."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minisphere.engine.retrieval.temporal import extract_time_bounds
from tests.engine.retrieval.helpers import DAY_MS, NOW, at, ids

# NOW = Monday 2026-11-30 15:00 UTC. Bounds are half-open [since, until); None = open.
TABLE = [
    ("today", at(2026, 11, 30), None),
    ("yesterday", at(2026, 11, 29), at(2026, 11, 30)),
    ("the day before yesterday", at(2026, 11, 28), at(2026, 11, 29)),
    ("this morning", at(2026, 11, 30, 0), at(2026, 11, 30, 12)),
    ("this afternoon", at(2026, 11, 30, 12), at(2026, 11, 30, 18)),
    ("this evening", at(2026, 11, 30, 18), at(2026, 12, 1)),
    ("tonight", at(2026, 11, 30, 18), at(2026, 12, 1)),
    ("last night", at(2026, 11, 29, 18), at(2026, 11, 30, 6)),
    ("this week", at(2026, 11, 30), None),
    ("last week", at(2026, 11, 23), at(2026, 11, 30)),
    ("this month", at(2026, 11, 1), None),
    ("last month", at(2026, 10, 1), at(2026, 11, 1)),
    ("this year", at(2026, 1, 1), None),
    ("last year", at(2025, 1, 1), at(2026, 1, 1)),
    ("3 days ago", at(2026, 11, 27), at(2026, 11, 28)),
    ("two days ago", at(2026, 11, 28), at(2026, 11, 29)),
    ("a few days ago", at(2026, 11, 27), at(2026, 11, 28)),
    ("a couple of days ago", at(2026, 11, 28), at(2026, 11, 29)),
    ("several weeks ago", at(2026, 11, 6, 3), at(2026, 11, 13, 3)),
    ("30 minutes ago", at(2026, 11, 30, 14, 29) + 30_000, at(2026, 11, 30, 14, 30) + 30_000),
    ("2 hours ago", at(2026, 11, 30, 12, 30), at(2026, 11, 30, 13, 30)),
    ("an hour ago", at(2026, 11, 30, 13, 30), at(2026, 11, 30, 14, 30)),
    ("2 weeks ago", at(2026, 11, 13, 3), at(2026, 11, 20, 3)),
    ("past 7 days", at(2026, 11, 23, 15), None),
    ("last 7 days", at(2026, 11, 23, 15), None),
    ("in the past 3 days", at(2026, 11, 27, 15), None),
    ("past week", at(2026, 11, 23, 15), None),
    ("past 24 hours", at(2026, 11, 29, 15), None),
    ("since 2026-09-01", at(2026, 9, 1), None),
    ("after 2026-09-01", at(2026, 9, 2), None),
    ("before 2026-09-01", None, at(2026, 9, 1)),
    ("until 2026-09-01", None, at(2026, 9, 2)),
    ("since Friday", at(2026, 11, 27), None),
    ("before Friday", None, at(2026, 11, 27)),
    ("since Monday", at(2026, 11, 30), None),  # today is a Monday: today counts
    ("on Friday", at(2026, 11, 27), at(2026, 11, 28)),
    ("on Monday", at(2026, 11, 30), at(2026, 12, 1)),
    ("on 2026-10-05", at(2026, 10, 5), at(2026, 10, 6)),
    ("last Monday", at(2026, 11, 23), at(2026, 11, 24)),  # strictly before today
    ("last Friday", at(2026, 11, 27), at(2026, 11, 28)),
    ("in March", at(2026, 3, 1), at(2026, 4, 1)),
    ("in March 2025", at(2025, 3, 1), at(2025, 4, 1)),
    ("in November", at(2026, 11, 1), at(2026, 12, 1)),  # this month included
    ("in December", at(2025, 12, 1), at(2026, 1, 1)),  # a future month means last year's
    ("during sept", at(2026, 9, 1), at(2026, 10, 1)),
    ("since March", at(2026, 3, 1), None),
    ("before March 2025", None, at(2025, 3, 1)),
    ("in 2025", at(2025, 1, 1), at(2026, 1, 1)),
    ("since 2025", at(2025, 1, 1), None),
    ("2026-10-05", at(2026, 10, 5), at(2026, 10, 6)),
]


@pytest.mark.parametrize("phrase, since, until", TABLE, ids=[row[0] for row in TABLE])
def test_phrase_bounds_and_removal(phrase, since, until):
    text, bounds = extract_time_bounds(f"budget {phrase} review", NOW)
    assert (bounds.since_ms, bounds.until_ms) == (since, until)
    assert text == "budget review"
    assert bounds.phrases == [phrase]


@pytest.mark.parametrize("phrase", ["YESTERDAY", "Last Week", "In MARCH 2025", "On FRIDAY"])
def test_phrases_are_case_insensitive(phrase):
    text, bounds = extract_time_bounds(f"notes {phrase}", NOW)
    assert bounds.active and text == "notes"
    assert bounds.phrases == [phrase]


def test_last_month_in_january_is_december_of_the_year_before():
    _, bounds = extract_time_bounds("last month", at(2027, 1, 15, 9))
    assert (bounds.since_ms, bounds.until_ms) == (at(2026, 12, 1), at(2027, 1, 1))
    _, this_month = extract_time_bounds("this month", at(2027, 1, 15, 9))
    assert this_month.since_ms == at(2027, 1, 1)


def test_last_week_from_a_sunday_is_the_week_before_this_one():
    sunday = at(2026, 12, 6, 10)
    _, bounds = extract_time_bounds("last week", sunday)
    assert (bounds.since_ms, bounds.until_ms) == (at(2026, 11, 23), at(2026, 11, 30))


def test_several_phrases_intersect():
    text, bounds = extract_time_bounds("deploys since 2026-11-01 before Friday", NOW)
    assert (bounds.since_ms, bounds.until_ms) == (at(2026, 11, 1), at(2026, 11, 27))
    assert text == "deploys"
    assert sorted(bounds.phrases) == ["before Friday", "since 2026-11-01"]


@pytest.mark.parametrize(
    "query",
    [
        "2026-13-45",
        "since 2026-13-45",
        "on 2026-02-30",
        "report 2026-00-10",
    ],
)
def test_invalid_dates_stay_text(query):
    text, bounds = extract_time_bounds(query, NOW)
    assert text == query
    assert not bounds.active and bounds.phrases == []


@pytest.mark.parametrize(
    "query",
    [
        "march of the penguins",
        "may",
        "may I see the notes",
        "Friday deploy checklist",
        "the 1990 world cup",
        "last call for papers",
        "weekly sync agenda",
        "monthly report",
        "yesterdays",
        "todays",
        "marching band",
        "2026-10-05x",
    ],
)
def test_words_that_are_not_time_phrases_do_not_trigger(query):
    text, bounds = extract_time_bounds(query, NOW)
    assert not bounds.active
    assert bounds.phrases == []
    assert text == query


@pytest.mark.parametrize(
    "query",
    [
        "9999 years ago",
        "past 9999 years",
        "after 9999-12-31",
        "9999-12-31",
        "until 9999-12-31",
        "on 9999-12-31",
        "in december 9999",
    ],
)
def test_dates_beyond_the_calendar_stay_text_instead_of_raising(query):
    text, bounds = extract_time_bounds(query, NOW)
    assert not bounds.active
    assert text == query


_NUMBERS = st.one_of(
    st.integers(0, 9999).map(str), st.sampled_from(["a", "an", "a few", "several", "twelve"])
)
_DATES = st.builds(
    lambda y, m, d: f"{y:04d}-{m:02d}-{d:02d}",
    st.integers(0, 9999),
    st.integers(0, 99),
    st.integers(0, 99),
)
_PHRASES = st.one_of(
    st.builds(
        "{} {} ago".format,
        _NUMBERS,
        st.sampled_from(["minutes", "hours", "days", "weeks", "months", "years"]),
    ),
    st.builds("past {} {}".format, _NUMBERS, st.sampled_from(["hours", "days", "years"])),
    st.builds(
        "{} {}".format, st.sampled_from(["since", "after", "before", "until", "on", ""]), _DATES
    ),
    st.builds("in {} {}".format, st.sampled_from(["march", "dec", "may"]), st.integers(0, 9999)),
    st.builds("in {}".format, st.integers(1900, 2099)),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(_PHRASES, min_size=1, max_size=3), st.integers(0, 4_000_000_000_000))
def test_rewrite_never_raises_on_any_number_or_date(phrases, now_ms):
    query = "notes " + " and ".join(phrases)
    text, bounds = extract_time_bounds(query, now_ms)
    assert text.startswith("notes")
    assert all(phrase in query for phrase in bounds.phrases)
    assert bounds.active == bool(bounds.phrases)


# ---- through recall ------------------------------------------------------------------------


def test_query_used_reports_text_terms_bounds_and_phrases(ws, clock, add):
    clock.set(NOW - DAY_MS)
    entry = add("Budget review for the platform team")
    clock.set(NOW)
    result = ws.recall("budget review yesterday")
    assert ids(result) == [entry]
    used = result["queryUsed"]
    assert used["boundsRelaxed"] is False
    assert used["original"] == "budget review yesterday"
    assert used["text"] == "budget review"
    assert used["terms"] == ["budget", "review"]
    assert used["timePhrases"] == ["yesterday"]
    assert (used["since"], used["until"]) == (at(2026, 11, 29), at(2026, 11, 30))
    assert (used["sinceIso"], used["untilIso"]) == ("2026-11-29T00:00:00Z", "2026-11-30T00:00:00Z")


def test_entries_outside_the_bounds_are_excluded(ws, clock, add):
    clock.set(at(2026, 11, 28, 23, 59) + 59_999)  # last ms before yesterday: excluded
    before = add("Deploy of the billing service, attempt one")
    clock.set(at(2026, 11, 29))  # first ms of yesterday: included
    first = add("Deploy of the billing service, attempt two")
    clock.set(at(2026, 11, 30) - 1)  # last ms of yesterday: included
    last = add("Deploy of the billing service, attempt three")
    clock.set(at(2026, 11, 30))  # first ms of today: excluded
    after = add("Deploy of the billing service, attempt four")
    clock.set(NOW)
    result = ws.recall("billing deploy yesterday")
    assert set(ids(result)) == {first, last}
    assert result["queryUsed"]["boundsRelaxed"] is False
    assert before not in ids(result) and after not in ids(result)
    unbounded = ws.recall("billing deploy")
    assert {before, first, last, after} <= set(ids(unbounded))


def test_open_bounds_exclude_one_side(ws, clock, add):
    clock.set(at(2026, 8, 15, 10))
    august = add("Vendor contract signed with Acme")
    clock.set(at(2026, 9, 15, 10))
    september = add("Vendor contract renewed with Acme")
    clock.set(NOW)
    assert ids(ws.recall("acme vendor contract since 2026-09-01")) == [september]
    assert ids(ws.recall("acme vendor contract before 2026-09-01")) == [august]
    assert set(ids(ws.recall("acme vendor contract in 2026"))) == {august, september}


def test_bounds_are_relaxed_when_the_bounded_search_finds_nothing(ws, clock, add):
    clock.set(NOW - 10 * DAY_MS)
    old = add("Billing service migrated to the new cluster")
    clock.set(NOW)
    add("Unrelated note about lunch plans")
    result = ws.recall("billing migration yesterday")
    assert ids(result) == [old]
    used = result["queryUsed"]
    assert used["boundsRelaxed"] is True
    assert used["timePhrases"] == ["yesterday"]
    # the phrase's words are searched too once the bounds are dropped
    assert "yesterday" in used["terms"]


def test_bounds_are_not_relaxed_when_the_bounded_search_finds_something(ws, clock, add):
    clock.set(NOW - 10 * DAY_MS)
    old = add("Billing service migrated to the new cluster")
    clock.set(NOW - DAY_MS)
    recent = add("Billing alerts were noisy after the migration")
    clock.set(NOW)
    result = ws.recall("billing migration yesterday")
    assert result["queryUsed"]["boundsRelaxed"] is False
    assert ids(result) == [recent] and old not in ids(result)


@pytest.mark.parametrize(
    "query",
    [
        "what happened yesterday?",
        "yesterday",
        "what did I do yesterday",
        "anything from yesterday?",
    ],
)
def test_a_time_phrase_alone_browses_that_period_newest_first(ws, clock, add, query):
    clock.set(NOW - 3 * DAY_MS)
    add("Deployed the billing service to staging")
    clock.set(at(2026, 11, 29, 9))
    morning = add("Met Alice about the roadmap")
    clock.set(at(2026, 11, 29, 17))
    evening = add("Fixed the login bug in auth")
    clock.set(at(2026, 11, 29, 12))
    noon = add("Wrote the incident summary for the outage")
    clock.set(NOW)
    add("Reviewed the quarterly numbers today")
    result = ws.recall(query)
    assert ids(result) == [evening, noon, morning]
    used = result["queryUsed"]
    assert used["terms"] == [] and used["arms"] == {"recency": 3}
    assert used["boundsRelaxed"] is False
    for item in result["items"]:
        assert item["breakdown"]["keyword"] is None
        assert item["breakdown"]["recency"]["createdAt"] == item["createdAt"]
    ranks = [item["breakdown"]["recency"]["rank"] for item in result["items"]]
    assert ranks == [1, 2, 3]


def test_browsing_an_empty_period_returns_nothing_without_error(ws, now_clock, add):
    add("Only entry, captured today")
    result = ws.recall("what happened last month?")
    assert result["items"] == []
    assert result["queryUsed"]["since"] == at(2026, 10, 1)


def test_time_phrase_leaves_the_searched_text(ws, clock, add):
    """'march' in 'in March' is a bound, not a word to search: an entry about marching is not
    found by the keyword 'march' when the phrase was consumed."""
    clock.set(at(2026, 3, 10))
    in_march = add("Sprint retro notes for the mobile app")
    clock.set(at(2026, 5, 10))
    add("The march parade blocked the road to the office; retro notes postponed")
    clock.set(NOW)
    result = ws.recall("retro notes in March")
    assert result["queryUsed"]["terms"] == ["retro", "notes"]
    assert ids(result) == [in_march]


def test_invalid_date_in_a_query_is_searched_as_text(ws, now_clock, add):
    hit = add("Ticket 2026-13-45 is a typo in the changelog")
    result = ws.recall("2026-13-45")
    assert result["queryUsed"]["since"] is None and result["queryUsed"]["until"] is None
    assert result["queryUsed"]["timePhrases"] == []
    assert hit in ids(result)


@pytest.mark.parametrize("query", ["9999 years ago", "notes after 9999-12-31"])
def test_recall_with_out_of_calendar_phrases_does_not_raise(ws, now_clock, add, query):
    add("notes from years ago")
    result = ws.recall(query)
    assert result["queryUsed"]["timePhrases"] == []
