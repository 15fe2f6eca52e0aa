"""Injectable time source. Everything in the engine asks a clock for epoch milliseconds."""
import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


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
