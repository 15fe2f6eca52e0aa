"""One shape for what a call came to: done with a value, or refused with a named error.

The engine's group commit answers a `Reply` per call, the writer thread hands each caller its
`Reply` with the timings added, and every method other processes call on a workspace actor
answers one (an engine error is then told apart from a failure of the actor itself, which
raises). Frozen: a reply is never amended, only replaced (`with_timings`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from minisphere.wire.timings import CallTimings

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Reply(Generic[T]):
    """Done (`value`) or refused (`error`), never both. `timings`: where the call's time went
    (milliseconds, and a few flags the writer sets); `replayed`: the answer is the stored one
    of an earlier call with the same idempotency key, and nothing was written."""

    value: T | None = None
    error: BaseException | None = None
    timings: CallTimings = field(default_factory=CallTimings)
    replayed: bool = False

    @classmethod
    def done(
        cls, value: T, *, replayed: bool = False, timings: CallTimings | None = None
    ) -> Reply[T]:
        return cls(value=value, replayed=replayed, timings=timings or {})

    @classmethod
    def failed(cls, error: BaseException, *, timings: CallTimings | None = None) -> Reply[Any]:
        return cls(error=error, timings=timings or {})

    @property
    def ok(self) -> bool:
        return self.error is None

    def unwrap(self) -> T:
        """The value; a refused call raises its error."""
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]  # done: value is the T it was given

    def with_timings(self, timings: CallTimings) -> Reply[T]:
        return replace(self, timings=timings)

    def __iter__(self) -> Iterator[Any]:
        """(ok, the value or the error): a batch's replies read as pairs."""
        yield self.ok
        yield self.value if self.error is None else self.error
