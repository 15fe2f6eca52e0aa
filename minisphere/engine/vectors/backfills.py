"""Backfills asked for by writes, run on a thread of their own, one at a time.

A write that leaves entries without a vector (its embedding failed, or a rebind came between its
embedding and its commit) asks for a backfill; the group-commit writer must not run it, since a
whole workspace's re-embedding would hold every write queued behind it. Asked again while one
runs, it runs once more after that one (a write may have left an entry the running one had
already passed); asked many times meanwhile, still once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from minisphere.errors import WorkspaceClosed

log = logging.getLogger("minisphere.vectors")

BACKFILL_STOP_WAIT_S = 5.0  # how long a closing workspace waits for a backfill to stop


class BackgroundBackfills:
    def __init__(self, run: Callable[[], object], name: str):
        self._run = run
        self._name = name
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._wanted = False
        self._closed = False
        self._thread: threading.Thread | None = None

    def request(self) -> None:
        """Run a backfill soon, off the caller's thread."""
        with self._lock:
            if self._closed:
                return
            self._wanted = True
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._lock:
                if not self._wanted or self._closed:
                    self._thread = None
                    self._idle.notify_all()
                    return
                self._wanted = False
            try:
                self._run()
            except WorkspaceClosed:  # closed while it ran: the next open backfills
                pass
            except Exception:  # its entries stay pending for the next one
                log.exception("background backfill failed")

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no backfill is asked for or running; False on `timeout`."""
        with self._lock:
            return self._idle.wait_for(lambda: self._thread is None, timeout)

    def close(self, timeout: float = BACKFILL_STOP_WAIT_S) -> None:
        """Ask for no more; wait (bounded) for the one running, which stops at its next batch."""
        with self._lock:
            self._closed = True
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
