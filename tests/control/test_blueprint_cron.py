"""A blueprint's cron is refused when the scheduler's own parser would refuse it (or when it
never fires), at blueprint time; a blueprint already stored is still readable."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minisphere.control.blueprints import parse_blueprint, parse_stored_blueprint
from minisphere.cron import cron_trigger
from minisphere.errors import InvalidArgument


def with_cron(cron: str) -> dict:
    return {"bindings": {"scheduledTasks": {"cron": cron, "limit": 10}}}


def scheduler_takes(cron: str) -> bool:
    try:
        trigger = cron_trigger(cron)
    except ValueError:
        return False
    return trigger.get_next_fire_time(None, datetime.now(UTC)) is not None


@pytest.mark.parametrize(
    "cron",
    [
        "99 * * * *",
        "* 24 * * *",
        "0 0 0 * *",
        "0 0 * 13 *",
        "0 0 * * 8",
        "*/0 * * * *",
        "5-1 * * * *",
        "1,,2 * * * *",
        "- * * * *",
        "*/99 * * * *",
        "0 0 31 2 *",
    ],
)
def test_cron_the_scheduler_would_refuse_is_refused_at_blueprint_time(cron):
    with pytest.raises(InvalidArgument, match="cron"):
        parse_blueprint(with_cron(cron))


FIELD = st.one_of(
    st.just("*"),
    st.integers(0, 99).map(str),
    st.tuples(st.integers(0, 99), st.integers(0, 99)).map(lambda p: f"{p[0]}-{p[1]}"),
    st.integers(0, 99).map(lambda n: f"*/{n}"),
    st.lists(st.integers(0, 99), min_size=2, max_size=3).map(lambda ns: ",".join(map(str, ns))),
)


@settings(max_examples=200, deadline=None)
@given(fields=st.lists(FIELD, min_size=5, max_size=5))
def test_blueprint_accepts_a_cron_exactly_when_the_scheduler_can_run_it(fields):
    cron = " ".join(fields)
    if scheduler_takes(cron):
        assert parse_blueprint(with_cron(cron)).bindings.scheduledTasks.cron == cron
    else:
        with pytest.raises(InvalidArgument):
            parse_blueprint(with_cron(cron))
    # a stored record is read back whatever its cron (the scheduler skips and audits it)
    assert parse_stored_blueprint(with_cron(cron)).bindings.scheduledTasks.cron == cron
