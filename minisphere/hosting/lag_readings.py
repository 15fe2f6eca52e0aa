"""The replica's lag, read off the caller's thread.

Reading it asks the node's replication daemon over its socket, which blocks for as long as the
daemon takes to answer (up to the control timeout when it is stopped or overloaded). The
workspace actor answers status requests on its event loop, where every call of the workspace
also runs: a blocking read there would stall them all. So a status shows the newest reading
(`measuredAt`, epoch seconds) and starts the next one on a thread of its own, one at a time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger("minisphere.host")
NOT_YET_READ: dict[str, Any] = {"status": "measuring", "lastSyncAt": None, "measuredAt": None}


class LagReadings:
    def __init__(self, read: Callable[[], Mapping[str, Any]], name: str = "replica"):
        self._read = read
        self._name = name
        self._latest: dict[str, Any] = dict(NOT_YET_READ)
        self._reading = False
        self._lock = threading.Lock()

    def latest(self) -> dict[str, Any]:
        """The newest reading (at once, never waiting for the daemon); a new one is started
        unless one is under way."""
        with self._lock:
            latest = dict(self._latest)
            if not self._reading:
                self._reading = True
                threading.Thread(
                    target=self._refresh, daemon=True, name=f"replica-lag-{self._name}"
                ).start()
        return latest

    def _refresh(self) -> None:
        reading: Mapping[str, Any]
        try:
            reading = self._read()
        except Exception as exc:  # noqa: BLE001 - shown as the reading, never raised
            log.warning("replica lag of %s not read: %r", self._name, exc)
            reading = {"status": "unknown", "lastSyncAt": None, "error": str(exc)[:300]}
        with self._lock:
            self._latest = {**reading, "measuredAt": time.time()}
            self._reading = False
