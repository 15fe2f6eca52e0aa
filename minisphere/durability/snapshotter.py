"""When to snapshot, and what to do when the store is down: the `Snapshotter`.

`Snapshotter` wraps a `take(reason) -> manifest` function (usually `take_snapshot` bound
to one workspace). A background thread takes a snapshot once `every_writes` acknowledged writes
have accumulated, or `every_s` seconds have passed since the last snapshot and something
changed. A failure (of any attempt, background or on demand) is recorded (wall time, message,
consecutive count) and logged, and the snapshot is retried once its exponential backoff (with
jitter) has passed, whatever the triggers say; writes are never blocked by it. `snapshot_now`
is the on-demand / hibernation path: synchronous, serialized with the background one, raising
the named error. `status()` is what the service shows in `GET /v1/workspaces/{id}`.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from minisphere.durability.constants import (
    SNAPSHOT_BACKOFF_FACTOR,
    SNAPSHOT_BACKOFF_INITIAL_S,
    SNAPSHOT_BACKOFF_JITTER_RATIO,
    SNAPSHOT_BACKOFF_MAX_S,
    SNAPSHOT_POLL_S,
)
from minisphere.durability.snapshots.manifest import Manifest
from minisphere.errors import MiniSphereError, SnapshotError
from minisphere.settings import SNAPSHOT_EVERY_S, SNAPSHOT_EVERY_WRITES
from minisphere.wire.residency import SnapshotStatus

SNAPSHOTTER_CLOSE_TIMEOUT_S = 30.0  # for a snapshot under way to finish as its host closes

log = logging.getLogger("minisphere.snapshots")


@dataclass(frozen=True)
class Backoff:
    initial_s: float = SNAPSHOT_BACKOFF_INITIAL_S
    factor: float = SNAPSHOT_BACKOFF_FACTOR
    max_s: float = SNAPSHOT_BACKOFF_MAX_S
    jitter_ratio: float = SNAPSHOT_BACKOFF_JITTER_RATIO

    def delay_s(self, failures: int, rng: random.Random | None = None) -> float:
        """Delay before the next attempt after `failures` consecutive failures (>= 1)."""
        base = min(self.max_s, self.initial_s * self.factor ** max(0, failures - 1))
        jitter = base * self.jitter_ratio * ((rng or random).random() * 2 - 1)
        return max(0.0, min(self.max_s, base + jitter))


class Snapshotter:
    def __init__(
        self,
        take: Callable[[str], Manifest],
        *,
        every_writes: int = SNAPSHOT_EVERY_WRITES,
        every_s: float = SNAPSHOT_EVERY_S,
        backoff: Backoff = Backoff(),
        poll_s: float = SNAPSHOT_POLL_S,
        name: str = "workspace",
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        on_status: Callable[[SnapshotStatus], None] | None = None,
        purge: Callable[[int], object] | None = None,
    ):
        self._take = take
        # after a forget: drop the versions taken before it (they may hold its text)
        self._purge = purge
        self._purge_owed_ms: int | None = None  # the newest forget whose purge is owed
        self.every_writes = int(every_writes)
        self.every_s = float(every_s)
        self.backoff = backoff
        self.poll_s = float(poll_s)
        self.name = name
        self._monotonic, self._wall = monotonic, wall
        self._on_status = on_status  # told the status after every attempt
        self._lock = threading.Lock()  # guards the counters below
        self._running = threading.Lock()  # one snapshot at a time
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.writes_total = 0
        self.last_position: int | None = None  # the newest snapshot's position, if known
        self._snapshotted_at_writes = 0
        self._last_base = monotonic()  # last success (or start) for the time trigger
        self._next_try = 0.0  # monotonic; backoff after a failure
        self.last_success_at: float | None = None
        self.last_version: str | None = None
        self.last_failure_at: float | None = None
        self.last_failure: str | None = None
        self.last_failure_code: str | None = None
        self.consecutive_failures = 0
        self.snapshots = 0
        self.failures = 0

    # ---- inputs ------------------------------------------------------------------------------
    def note_writes(self, count: int = 1) -> None:
        with self._lock:
            self.writes_total += count

    @property
    def pending_writes(self) -> int:
        with self._lock:
            return self.writes_total - self._snapshotted_at_writes

    def mark_clean(self, manifest: Manifest | None = None) -> None:
        """The file now equals a stored snapshot (right after a restore published it as the
        newest version: `manifest`)."""
        with self._lock:
            self._snapshotted_at_writes = self.writes_total
            self._last_base = self._monotonic()
            if manifest is not None:
                self.last_version = manifest.get("version")
                self.last_position = manifest.get("position", self.last_position)
                self.last_success_at = self._wall()
        self._notify()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No snapshot runs while inside (a restore swapping the file): one that is running is
        waited for, and one that starts meanwhile waits, so no copy of the old file can land
        as a version after the restore's own."""
        with self._running:
            yield

    def resume_schedule(self, last_snapshot_at: float | None) -> None:
        """Carry the time trigger over from an earlier residency: the newest snapshot was
        taken at `last_snapshot_at` (epoch seconds), so the next is due `every_s` after it,
        not after this wake (a workspace woken often for short sessions still gets one)."""
        if last_snapshot_at is None:
            return
        with self._lock:
            age_s = max(0.0, self._wall() - float(last_snapshot_at))
            self._last_base = self._monotonic() - age_s
            self.last_success_at = float(last_snapshot_at)

    def owe_purge(self, forgotten_at_ms: int) -> None:
        """A forget committed at `forgotten_at_ms`: the versions taken before it are to go."""
        with self._lock:
            self._purge_owed_ms = max(forgotten_at_ms, self._purge_owed_ms or 0)

    @property
    def purge_is_owed(self) -> bool:
        with self._lock:
            return self._purge_owed_ms is not None and self._purge is not None

    def purge_owed(self) -> None:
        """Run the owed purge now (the named error is raised and the purge stays owed)."""
        with self._lock:
            owed = self._purge_owed_ms
        if owed is None or self._purge is None:
            return
        try:
            self._purge(owed)
        except BaseException as exc:
            self._record_failure(exc)
            raise
        with self._lock:
            if self._purge_owed_ms == owed:  # a later forget owes its own
                self._purge_owed_ms = None

    def due(self) -> bool:
        pending, now = self.pending_writes, self._monotonic()
        if pending <= 0 or now < self._next_try:
            return False
        by_writes = self.every_writes > 0 and pending >= self.every_writes
        by_time = self.every_s > 0 and now - self._last_base >= self.every_s
        by_retry = self.consecutive_failures > 0  # a failed attempt, once backed off
        return by_writes or by_time or by_retry

    # ---- snapshots -----------------------------------------------------------------------------
    def snapshot_now(self, reason: str = "manual") -> Manifest:
        """Take a snapshot now (waiting for a running one); the named error is raised."""
        with self._running:
            with self._lock:
                marker = self.writes_total
            try:
                manifest = self._take(reason)
            except BaseException as exc:
                self._record_failure(exc)
                self._notify()
                raise
            self._record_success(manifest, marker)
            self._notify()
            return manifest

    def _notify(self) -> None:
        if self._on_status is not None:
            try:
                self._on_status(self.status())
            except Exception:  # reporting must never fail a snapshot
                log.exception("snapshot status callback failed")

    def _record_success(self, manifest: Manifest, marker: int) -> None:
        with self._lock:
            self._snapshotted_at_writes = max(self._snapshotted_at_writes, marker)
            self._last_base = self._monotonic()
            self._next_try = 0.0
            self.last_success_at = self._wall()
            self.last_version = manifest.get("version")
            self.last_position = manifest.get("position", self.last_position)
            self.consecutive_failures = 0
            self.snapshots += 1

    def _record_failure(self, exc: BaseException) -> None:
        message = (
            exc.message if isinstance(exc, MiniSphereError) else f"{exc.__class__.__name__}: {exc}"
        )
        with self._lock:
            self.consecutive_failures += 1
            self.failures += 1
            self.last_failure_at = self._wall()
            self.last_failure = message
            self.last_failure_code = getattr(exc, "code", "internal")
            delay = self.backoff.delay_s(self.consecutive_failures)
            self._next_try = self._monotonic() + delay
        log.warning(
            "snapshot of %s failed (%d in a row; next try in %.1f s): %s",
            self.name,
            self.consecutive_failures,
            delay,
            message,
        )

    def tick(self) -> Manifest | None:
        """One background step: the purge a forget owes, then a snapshot if due. Failures are
        recorded, never raised."""
        if self.purge_is_owed and self._monotonic() >= self._next_try:
            try:
                self.purge_owed()
            except (SnapshotError, OSError):
                return None
            except Exception:  # a bug must not kill the background thread
                log.exception("unexpected error purging snapshots of %s", self.name)
                return None
        if not self.due():
            return None
        try:
            return self.snapshot_now("periodic")
        except (SnapshotError, OSError):
            return None
        except Exception:  # a bug must not kill the background thread
            log.exception("unexpected error in background snapshot of %s", self.name)
            return None

    def status(self) -> SnapshotStatus:
        with self._lock:
            retry_in = max(0.0, self._next_try - self._monotonic()) if self._next_try else 0.0
            return {
                "lastSnapshotAt": self.last_success_at,
                "lastVersion": self.last_version,
                "lastPosition": self.last_position,
                "pendingWrites": self.writes_total - self._snapshotted_at_writes,
                "snapshots": self.snapshots,
                "failures": self.failures,
                "consecutiveFailures": self.consecutive_failures,
                "lastFailureAt": self.last_failure_at,
                "lastFailure": self.last_failure,
                "lastFailureCode": self.last_failure_code,
                "retryInS": round(retry_in, 3) if self.consecutive_failures else None,
                "everyWrites": self.every_writes,
                "everyS": self.every_s,
            }

    # ---- background thread -----------------------------------------------------------------------
    def start(self) -> Snapshotter:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, daemon=True, name=f"snapshots-{self.name}"
            )
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.poll_s):
            self.tick()

    def close(self, timeout_s: float = SNAPSHOTTER_CLOSE_TIMEOUT_S) -> bool:
        """Stop the background thread; False when it outlived the wait (an upload under way)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is None:
            return True
        thread.join(timeout_s)
        return not thread.is_alive()
