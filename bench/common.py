"""Small shared helpers for the benchmarks: percentiles, tables, result files."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import statistics
import sys
from pathlib import Path

RESULTS_DIR = Path(__file__).parent / "results"


def percentile(samples: list[float], pct: float) -> float:
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def p50(samples: list[float]) -> float:
    return statistics.median(samples) if samples else float("nan")


def table(headers: list[str], rows: list[list]) -> str:
    def cell(value) -> str:
        if isinstance(value, float):
            return f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"
        return str(value)

    cells = [[cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    lines = [
        "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in cells]
    return "\n".join(lines)


def save_report(name: str, body: str) -> Path:
    """Write bench/results/<name>.md with the command line and date on top; return the path."""
    RESULTS_DIR.mkdir(exist_ok=True)
    path = RESULTS_DIR / f"{name}.md"
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = "python -m bench." + Path(sys.argv[0]).stem + " " + " ".join(sys.argv[1:])
    header = (
        f"# {name} benchmark\n\nCommand: `{command.strip()}`  \nRun: {stamp} on "
        f"{platform.node()} ({platform.machine()}, Python {platform.python_version()})\n\n"
    )
    path.write_text(header + body + "\n", encoding="utf-8")
    return path


def quoted_reports(names: list[str]) -> str:
    """The latest saved run of each named benchmark (its command, date and first table), quoted
    as it stands in bench/results, for a report that answers for several benchmarks."""
    parts = []
    for name in names:
        path = RESULTS_DIR / f"{name}.md"
        if not path.exists():
            parts.append(f"### {name}\n\nnot saved yet in bench/results")
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        said = [line for line in lines if line.startswith(("Command:", "Run:"))]
        first = next((i for i, line in enumerate(lines) if line.startswith("|")), len(lines))
        end = next(
            (i for i in range(first, len(lines)) if not lines[i].startswith("|")), len(lines)
        )
        parts.append(
            "\n".join([f"### {name} (`bench/results/{name}.md`)", "", *said, "", *lines[first:end]])
        )
    return "\n\n".join(parts)


def machine_note(detail: str = "") -> str:
    """The line every shared-machine benchmark ends its notes with (ratios, not absolutes)."""
    return (
        f"{os.cpu_count()} CPUs; load average at the end {os.getloadavg()[0]:.2f} (the "
        f"machine is shared){detail}."
    )


def publish_report(name: str, body: str, notes: list[str], appendix: str = "") -> int:
    """Print the table, its notes and any appendix, save them as bench/results/<name>.md;
    exit status 0."""
    text = body + "\n\n" + "\n".join(f"- {n}" for n in notes) + appendix
    print(text)
    print(f"saved to {save_report(name, text)}")
    return 0
