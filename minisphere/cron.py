"""Five-field cron expressions with the meaning cron gives them, run by APScheduler:
`cron_trigger(cron)`.

Why not `CronTrigger.from_crontab`: APScheduler numbers weekdays from Monday (0 = Monday), so
`0 0 * * 0` fires on Mondays there, while every cron reads 0 (and 7) as Sunday. The weekday
field is therefore translated into day names before APScheduler sees it. And when both the
day of month and the day of week are restricted, cron fires on either, APScheduler only on
both; such an expression is refused rather than run with a meaning its author did not intend.
"""

from __future__ import annotations

from datetime import UTC

from apscheduler.triggers.cron import CronTrigger

CRON_WEEKDAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_WEEKDAY_MAX = 7  # cron accepts 7 for Sunday too


def _weekday_number(text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 0 <= int(text) <= _WEEKDAY_MAX:
        raise ValueError(f"day of week {text!r} is not 0-7 (0 and 7 are Sunday)")
    return int(text)


def cron_weekdays(field: str) -> str:
    """The day-of-week field of a cron expression as APScheduler day names ('*' stays)."""
    if field == "*":
        return field
    days: set[int] = set()
    for part in field.split(","):
        span, slash, step_text = part.partition("/")
        step = int(step_text) if slash and step_text.isascii() and step_text.isdigit() else None
        if slash and not step:
            raise ValueError(f"day of week step {step_text!r} must be a positive integer")
        if span == "*":
            low, high = 0, 6
        elif "-" in span:
            first, _, last = span.partition("-")
            low, high = _weekday_number(first), _weekday_number(last)
            if low > high:
                raise ValueError(f"day of week range {span!r} runs backwards")
        else:
            low = _weekday_number(span)
            high = 6 if slash else low  # "n/step": from n to the end of the week
        days.update(day % 7 for day in range(low, high + 1, step or 1))
    return ",".join(CRON_WEEKDAY_NAMES[day] for day in sorted(days))


def cron_trigger(cron: str) -> CronTrigger:
    """The UTC trigger of a five-field cron expression, as cron means it (ValueError if not)."""
    fields = cron.split()
    if len(fields) != 5:
        raise ValueError("a cron expression has 5 fields: minute hour day month weekday")
    minute, hour, day, month, weekday = fields
    if day != "*" and weekday != "*":
        raise ValueError(
            "restrict either the day of month or the day of week, not both (cron "
            "fires on either, this scheduler would need both)"
        )
    return CronTrigger(
        minute=minute,
        hour=hour,
        day=day,
        month=month,
        day_of_week=cron_weekdays(weekday),
        timezone=UTC,
    )
