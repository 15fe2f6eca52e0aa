"""The directory's wake admission: a wake that would wait past the deadline behind others is
refused at once with a Retry-After that follows the measured pace; none is refused while no
other wake is under way."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from minisphere.control.residency_policy import (
    IN_SESSION_S,
    idle_before_hibernation_s,
    retirement_reason,
)
from minisphere.control.wake_admission import WakeAdmission


def paced(admission: WakeAdmission, wake_s: float, wakes: int = 30) -> None:
    """`wakes` wakes one after another, each taking `wake_s`."""
    now = 0.0
    for _ in range(wakes):
        began = admission.begin(now)
        now += wake_s
        admission.end(began, now)


def test_a_wake_with_none_under_way_is_admitted_however_slow_the_last_ones_were():
    admission = WakeAdmission(deadline_s=2.0)
    paced(admission, wake_s=30.0)  # a restore from a slow store, say
    assert admission.refusal_s() is None


def test_wakes_queued_past_the_deadline_are_refused_with_a_retry_after_from_the_pace():
    admission = WakeAdmission(deadline_s=2.0)
    paced(admission, wake_s=0.5)  # ~2 wakes a second
    admitted = 0
    while admission.refusal_s() is None:
        admission.begin(100.0)
        admitted += 1
    assert 2 <= admitted <= 5  # what ~2 s holds at that pace, give or take
    retry_after_s = admission.refusal_s()
    assert retry_after_s >= 1 and retry_after_s <= 3
    assert admission.status()["refused"] == 2


def test_an_exempt_wake_is_admitted_and_the_exemption_is_asked_only_before_a_refusal():
    """A wake waiting for a node the autoscaler adds is exempt; asking costs a call to Ray."""
    admission = WakeAdmission(deadline_s=2.0)
    paced(admission, wake_s=0.5)
    asked = []

    def exempt() -> bool:
        asked.append(admission.in_flight)
        return True

    while admission.refusal_s() is None:
        assert admission.refusal_s(exempt) is None
        admission.begin(100.0)
    assert asked == []  # every one of those was admitted anyway
    assert admission.refusal_s(exempt) is None and asked == [admission.in_flight]
    assert admission.status()["refused"] == 1  # the one plain refusal above


def test_a_faster_pace_admits_more_wakes_at_once():
    slow, fast = WakeAdmission(deadline_s=2.0), WakeAdmission(deadline_s=2.0)
    paced(slow, wake_s=1.0)
    paced(fast, wake_s=0.05)  # recycled processes bind in tens of ms

    def capacity(admission):
        n = 0
        while admission.refusal_s() is None:
            admission.begin(100.0)
            n += 1
        return n

    assert capacity(fast) > 5 * capacity(slow)


def test_a_deadline_of_zero_refuses_nothing():
    admission = WakeAdmission(deadline_s=0.0)
    for _ in range(1000):
        assert admission.refusal_s() is None
        admission.begin(0.0)


@given(
    st.lists(st.floats(min_value=0.0, max_value=60.0), min_size=1, max_size=50),
    st.integers(min_value=0, max_value=200),
)
def test_a_refusal_always_names_a_whole_second_or_more(durations, queued):
    admission = WakeAdmission(deadline_s=1.0)
    now = 0.0
    for duration in durations:
        began = admission.begin(now)
        now += duration
        admission.end(began, now)
    for _ in range(queued):
        admission.begin(now)
    retry_after_s = admission.refusal_s()
    assert retry_after_s is None or retry_after_s >= 1.0
    assert admission.in_flight == queued


@given(st.floats(min_value=0.0, max_value=3600.0), st.integers(0, 500), st.integers(1, 500))
def test_idle_time_shrinks_only_near_the_cap_and_never_below_a_session_gap(idle_s, resident, cap):
    chosen = idle_before_hibernation_s(idle_s, resident, cap)
    assert chosen <= idle_s
    assert chosen >= min(idle_s, 2 * IN_SESSION_S)
    if resident <= 0.75 * cap:
        assert chosen == idle_s


def test_a_full_cap_hibernates_idle_workspaces_after_twice_a_session_gap():
    assert idle_before_hibernation_s(60.0, 100, 100) == 2 * IN_SESSION_S
    assert idle_before_hibernation_s(60.0, 50, 100) == 60.0


def test_a_process_is_retired_after_its_binds_or_past_its_memory_growth():
    mib = 1024 * 1024
    assert retirement_reason(5, 60 * mib, 50 * mib, 1000, 64 * mib) is None
    assert "served" in retirement_reason(1000, 60 * mib, 50 * mib, 1000, 64 * mib)
    assert "grew" in retirement_reason(5, 120 * mib, 50 * mib, 1000, 64 * mib)
    assert retirement_reason(5, 0, 0, 1000, 64 * mib) is None  # memory not known
    assert retirement_reason(1, 60 * mib, 50 * mib, 0, 64 * mib) == "recycling is off"
