"""The ingress's wake gate: wakes are refused while the calls already admitted are late, and
let in again once they are not."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from minisphere.control.call_pressure import MIN_SAMPLES, PRESSURE_WINDOW_S, CallPressure

TARGET_S = 0.25


def answered(pressure: CallPressure, now: float, seconds: float) -> None:
    pressure.end(pressure.begin(now - seconds), now)


def test_a_window_of_late_calls_refuses_the_wakes_of_the_next_window():
    pressure = CallPressure(TARGET_S)
    assert pressure.admits_wake(0.0)
    for _ in range(5):
        answered(pressure, 0.5, 0.4)
    assert not pressure.admits_wake(PRESSURE_WINDOW_S)
    assert pressure.refused == 1


def test_wakes_are_let_in_again_once_a_window_of_calls_is_back_under_the_target():
    pressure = CallPressure(TARGET_S)
    pressure.admits_wake(0.0)
    for _ in range(5):
        answered(pressure, 0.5, 0.4)
    assert not pressure.admits_wake(1.0)
    for _ in range(5):
        answered(pressure, 1.5, 0.01)
    assert pressure.admits_wake(2.0)


def test_calls_stalled_without_any_answer_still_refuse_wakes():
    """Under a stall no call completes: the waits of those still unanswered count."""
    pressure = CallPressure(TARGET_S)
    pressure.admits_wake(0.0)
    for _ in range(MIN_SAMPLES):
        pressure.begin(0.1)
    assert not pressure.admits_wake(1.0)


def test_a_quiet_window_says_nothing_and_admits():
    pressure = CallPressure(TARGET_S)
    pressure.admits_wake(0.0)
    answered(pressure, 0.5, 5.0)  # one slow call is not a pace
    assert pressure.admits_wake(1.0)


def test_a_call_that_woke_its_workspace_is_not_counted_as_the_pace():
    pressure = CallPressure(TARGET_S)
    pressure.admits_wake(0.0)
    for _ in range(5):
        pressure.end(pressure.begin(0.0), 0.9, counted=False)
    assert pressure.admits_wake(1.0)


def test_a_target_of_zero_never_refuses():
    pressure = CallPressure(0.0)
    for _ in range(10):
        pressure.begin(0.0)
    assert pressure.admits_wake(100.0)


@given(st.lists(st.floats(0.0, 2.0), min_size=MIN_SAMPLES, max_size=40))
def test_the_verdict_is_the_median_of_the_window_against_the_target(durations):
    pressure = CallPressure(TARGET_S)
    pressure.admits_wake(0.0)
    for seconds in durations:
        answered(pressure, 0.9, seconds)
    ordered = sorted(durations)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    assert pressure.admits_wake(1.0) == (median <= TARGET_S)
    assert pressure.retry_after_s() >= 1
