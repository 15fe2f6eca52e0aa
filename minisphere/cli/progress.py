"""Progress output for long operations (import, export, raw copies) on stderr.

On a terminal it redraws one line (`\\r`): label, bar, done/total, percent, rate and ETA. When
stderr is not a terminal (logs, CI) it prints a plain line at most every `LOG_EVERY_S` seconds
and once at the end, so logs stay readable.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

BAR_WIDTH_CHARS = 30
REDRAW_EVERY_S = 0.1
LOG_EVERY_S = 5.0


class ProgressLine:
    def __init__(
        self,
        label: str,
        unit: str = "lines",
        stream: TextIO | None = None,
        interactive: bool | None = None,
    ):
        self.label, self.unit = label, unit
        self.stream = stream if stream is not None else sys.stderr
        self.interactive = self.stream.isatty() if interactive is None else interactive
        self.started = time.monotonic()
        self._last_shown = 0.0
        self.done = self.total = 0

    def render(self, done: int, total: int) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-6)
        rate = done / elapsed
        if total > 0:
            frac = min(1.0, done / total)
            filled = int(frac * BAR_WIDTH_CHARS)
            bar = "#" * filled + "." * (BAR_WIDTH_CHARS - filled)
            eta = (total - done) / rate if rate > 0 and done < total else 0.0
            return (
                f"{self.label} [{bar}] {done}/{total} {self.unit} ({frac:.0%}) "
                f"{rate:,.0f}/s eta {eta:.0f}s"
            )
        return f"{self.label} {done} {self.unit} {rate:,.0f}/s"

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        now = time.monotonic()
        every = REDRAW_EVERY_S if self.interactive else LOG_EVERY_S
        if now - self._last_shown < every:
            return
        self._last_shown = now
        self._show()

    def _show(self) -> None:
        text = self.render(self.done, self.total)
        if self.interactive:
            self.stream.write("\r" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self, summary: str = "") -> None:
        self._show()
        if self.interactive:
            self.stream.write("\n")
        if summary:
            self.stream.write(f"{self.label}: {summary}\n")
        self.stream.flush()
