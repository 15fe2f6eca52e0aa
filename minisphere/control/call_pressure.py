"""Whether the calls this ingress replica already carries are answered in time, so that a new
wake may be let in.

A wake brings a session: dozens of calls over the next minute, plus the CPU of binding a
process. When the machine is saturated every call slows down together, and letting more
sessions in only makes every session late. So the replica watches the calls it sends to
workspaces that are already resident (the work already admitted): when their median time over
the last window is past `target_s`, or calls still unanswered have waited past it, new wakes are
refused at once with 503 `overloaded` and a Retry-After, and calls to resident workspaces go on.
Once a window's calls are back under the target, wakes are let in again.

Plain Python with no clock of its own (callers pass `now`), so the rule is tested without a
service.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import median

PRESSURE_WINDOW_S = 1.0  # the calls of the last window decide the next one
MIN_SAMPLES = 3  # fewer answered calls than this in a window say nothing
REFUSAL_RETRY_AFTER_S = 1  # whole seconds: one window later the verdict is new


@dataclass
class CallPressure:
    target_s: float  # 0: never congested (wakes never refused here)
    window_s: float = PRESSURE_WINDOW_S
    congested: bool = False
    refused: int = 0
    _window_end: float = 0.0
    _samples: list[float] = field(default_factory=list)
    _in_flight: dict[int, float] = field(default_factory=dict)
    _next_ticket: int = 0

    def begin(self, now: float) -> int:
        """A call to a resident workspace was sent; `end` takes the ticket."""
        self._next_ticket += 1
        self._in_flight[self._next_ticket] = now
        return self._next_ticket

    def end(self, ticket: int, now: float, counted: bool = True) -> None:
        """The call answered; `counted=False`: it says nothing of the pace (it woke the
        workspace after all, or failed)."""
        began = self._in_flight.pop(ticket, None)
        if began is not None and counted:
            self._samples.append(now - began)

    def admits_wake(self, now: float) -> bool:
        """False: a wake now would only make the admitted calls later (refuse it)."""
        if self.target_s <= 0:
            return True
        if now >= self._window_end:
            self._judge_window(now)
        if self.congested:
            self.refused += 1
        return not self.congested

    def retry_after_s(self) -> int:
        return max(REFUSAL_RETRY_AFTER_S, math.ceil(self.window_s))

    def _judge_window(self, now: float) -> None:
        # calls still unanswered count with the time they have waited so far: under a stall
        # none completes, and a verdict from completed calls alone would see nothing
        waits = self._samples + [
            now - began for began in self._in_flight.values() if now - began > self.target_s
        ]
        self.congested = len(waits) >= MIN_SAMPLES and median(waits) > self.target_s
        self._samples = []
        self._window_end = now + self.window_s
