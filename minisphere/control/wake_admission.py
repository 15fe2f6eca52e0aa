"""Whether the directory takes on another wake now, or refuses it at once (`overloaded`, with
the seconds after which asking again is likely to be admitted).

A wake queued behind others that cannot be bound within the caller's deadline would only time
out later, after taking its share of the CPU every other wake needed: refused at once, its
caller backs off (the clients retry after Retry-After) and the wakes admitted finish in time.

The estimate is Little's law over the wakes just served: throughput = mean wakes in flight /
mean wake duration, both as moving averages of the recent wakes, so it follows the machine's
own pace (a recycled process binds far sooner than a fresh start, a loaded node later than
either). A new wake with `n` already in flight is expected to be bound after (n + 1) /
throughput seconds. With none in flight a wake is always admitted: there is no queue to wait
behind, whatever the last one took. Plain Python, no clock of its own (callers pass `now`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict

# The moving averages' weight of the newest wake: ~the last 10 wakes count.
WAKE_AVERAGE_WEIGHT = 0.1
FIRST_WAKE_GUESS_S = 0.5  # the duration assumed before any wake was measured
MIN_RETRY_AFTER_S = 1.0  # Retry-After is whole seconds (at least one)


class WakeAdmissionStatus(TypedDict):
    inFlight: int
    deadlineS: float
    meanWakeS: float
    throughputPerS: float
    admitted: int
    refused: int


@dataclass
class WakeAdmission:
    deadline_s: float  # a wake expected to take longer than this is refused
    in_flight: int = 0
    mean_duration_s: float = FIRST_WAKE_GUESS_S
    mean_in_flight: float = 1.0
    admitted: int = 0
    refused: int = 0

    def throughput_per_s(self) -> float:
        return max(self.mean_in_flight, 1.0) / max(self.mean_duration_s, 1e-3)

    def expected_wait_s(self) -> float:
        """How long a wake admitted now is expected to take to be bound."""
        return (self.in_flight + 1) / self.throughput_per_s()

    def refusal_s(self, exempt: Callable[[], bool] = lambda: False) -> float | None:
        """None: admit (then `begin`); else the seconds to ask again after (Retry-After).
        `exempt()` is asked only of a wake that would be refused: True admits it anyway."""
        if self.in_flight == 0 or self.deadline_s <= 0:
            return None
        wait_s = self.expected_wait_s()
        if wait_s <= self.deadline_s or exempt():
            return None
        self.refused += 1
        # by then the wakes ahead of it will have been bound (or refused in turn)
        return max(MIN_RETRY_AFTER_S, math.ceil(self.in_flight / self.throughput_per_s()))

    def begin(self, now: float) -> tuple[float, int]:
        """An admitted wake starts; returns what `end` takes."""
        self.in_flight += 1
        self.admitted += 1
        return now, self.in_flight

    def end(self, began: tuple[float, int], now: float) -> None:
        """The wake ended (bound or failed): its duration, and how many were under way when it
        began, join the averages. Only ended wakes count: a burst whose wakes have not ended
        yet is judged by the pace measured before it, not by its own unproven concurrency."""
        started, seen = began
        self.in_flight = max(0, self.in_flight - 1)
        duration = max(0.0, now - started)
        self.mean_duration_s += WAKE_AVERAGE_WEIGHT * (duration - self.mean_duration_s)
        self.mean_in_flight += WAKE_AVERAGE_WEIGHT * (seen - self.mean_in_flight)

    def status(self) -> WakeAdmissionStatus:
        return {
            "inFlight": self.in_flight,
            "deadlineS": self.deadline_s,
            "meanWakeS": round(self.mean_duration_s, 4),
            "throughputPerS": round(self.throughput_per_s(), 2),
            "admitted": self.admitted,
            "refused": self.refused,
        }
