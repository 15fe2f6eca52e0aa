"""How the directory hears how far a workspace has got (its position: engine/location.py), so
that no copy below it is ever opened: after each snapshot (with the position the store now
holds), after a restore, and within POSITION_REPORT_S of any write -- at most one report per
interval however many writes, and the last write always reported. Fire-and-forget: a report
that does not arrive leaves the directory's record behind, never ahead."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

POSITION_REPORT_S = 1.0  # how often the directory hears the position while writing


class PositionReports:
    def __init__(self, position: Callable[[], int | None], send: Callable[[int, int | None], None]):
        self._position = position  # the open file's position (None: not open)
        self._send = send  # (position, stored position or None) -> directory
        self._reported_at = float("-inf")
        self._due = False

    def report(self, stored: int | None = None) -> None:
        position = self._position()
        if position is None:
            return
        self._reported_at = time.monotonic()
        self._send(position, stored)

    def after_write(self) -> None:
        """On the actor's event loop: report now, or once the interval since the last is up."""
        if self._due:
            return
        self._due = True
        delay = max(0.0, self._reported_at + POSITION_REPORT_S - time.monotonic())

        def send() -> None:
            self._due = False
            self.report()

        asyncio.get_running_loop().call_later(delay, send)
