"""benchmarks/results/<name>.md: one page per file of bench/results/, the file's own text
(command, date, machine, tables) under a line naming its source. The results are written
by the benchmarks themselves; a page is never edited by hand."""

from __future__ import annotations

from docs.generate import ROOT, notice

RESULTS = ROOT / "bench" / "results"
PAGES = "benchmarks/results"


def pages() -> dict[str, str]:
    made = {}
    for source in sorted(RESULTS.glob("*.md")):
        text = source.read_text(encoding="utf-8").rstrip("\n") + "\n"
        # a page with no command line (the tuning notes) was written by hand, not by a run
        origin = (
            "written by the benchmark's own run"
            if "\nCommand: `" in text
            else "kept by hand beside the runs"
        )
        made[f"{PAGES}/{source.name}"] = (
            f"{notice(f'bench/results/{source.name}')}\n{text}\n"
            f"*Source: `bench/results/{source.name}`, {origin}.*\n"
        )
    return made
