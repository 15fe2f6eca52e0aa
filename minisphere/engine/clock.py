"""Time: the injectable clock of the engine and the one way to read and print epoch milliseconds.

Everything in the engine asks a clock for epoch milliseconds, so tests can move time by hand;
code outside the engine calls `epoch_ms()` and formats with `iso_utc()`.
"""

import threading
import time
from typing import Protocol


def epoch_ms() -> int:
    """Now, in milliseconds since the Unix epoch (wall clock)."""
    return time.time_ns() // 1_000_000


def iso_utc(ms: int, *, milliseconds: bool = False) -> str:
    """`2026-09-01T12:00:00Z` (or `...00.123Z`) for epoch milliseconds."""
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000))
    return text + (f".{ms % 1000:03d}Z" if milliseconds else "Z")


class Clock(Protocol):
    def now_ms(self) -> int: ...


class SystemClock:
    def now_ms(self) -> int:
        return epoch_ms()


class ManualClock:
    """A clock tests move by hand: no sleeping in tests."""

    def __init__(self, start_ms: int = 1_788_000_000_000):
        self._now_ms = start_ms
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        with self._lock:
            return self._now_ms

    def advance(self, *, ms: int = 0, seconds: float = 0, days: float = 0) -> int:
        with self._lock:
            self._now_ms += int(ms + seconds * 1000 + days * 86_400_000)
            return self._now_ms

    def set(self, now_ms: int) -> None:
        with self._lock:
            self._now_ms = now_ms
