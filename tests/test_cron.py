"""Cron expressions mean what cron means by them, on APScheduler: weekday 0 and 7 are Sunday
(APScheduler's own crontab parser takes 0 for Monday), and an expression restricting both the
day of month and the day of week is refused (cron ORs them, APScheduler would AND them)."""

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minisphere.cron import CRON_WEEKDAY_NAMES, cron_trigger, cron_weekdays

A_MONDAY = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def fire_days(cron: str, days: int = 14) -> list[str]:
    trigger, when, seen = cron_trigger(cron), A_MONDAY, []
    end = A_MONDAY + timedelta(days=days)
    while True:
        when = trigger.get_next_fire_time(None, when + timedelta(seconds=1))
        if when is None or when >= end:
            return seen
        seen.append(when.strftime("%a").lower())


@pytest.mark.parametrize(
    "weekday, expected", [("0", "sun"), ("7", "sun"), ("1", "mon"), ("6", "sat")]
)
def test_weekday_numbers_mean_what_cron_means(weekday, expected):
    assert set(fire_days(f"0 0 * * {weekday}")) == {expected}


@pytest.mark.parametrize(
    "field, expected",
    [
        ("1-5", "mon,tue,wed,thu,fri"),
        ("0,6", "sun,sat"),
        ("*/2", "sun,tue,thu,sat"),
        ("5-7", "sun,fri,sat"),
        ("3/2", "wed,fri"),
        ("*", "*"),
    ],
)
def test_weekday_fields_translate_to_day_names(field, expected):
    assert cron_weekdays(field) == expected


@pytest.mark.parametrize("cron", ["0 0 1 * 1", "0 0 */2 * 1-5"])
def test_both_day_of_month_and_weekday_restricted_is_refused(cron):
    with pytest.raises(ValueError, match="either the day of month or the day of week"):
        cron_trigger(cron)


@pytest.mark.parametrize("field", ["8", "5-1", "*/0", "1/", "x"])
def test_bad_weekday_fields_are_refused(field):
    with pytest.raises(ValueError):
        cron_weekdays(field)


@given(st.integers(0, 7), st.integers(0, 7))
def test_any_weekday_range_fires_on_exactly_those_days(low, high):
    if low > high:
        low, high = high, low
    expected = {CRON_WEEKDAY_NAMES[day % 7] for day in range(low, high + 1)}
    assert set(fire_days(f"30 6 * * {low}-{high}")) == expected
