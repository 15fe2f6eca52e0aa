"""Exact prefilters (status, kind, tag, time range + the always-on filters) as SQL over `e`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from minisphere.engine.normalize import normalize_tag
from minisphere.engine.retrieval.temporal import TimeBounds
from minisphere.engine.staleness import tag_filter_sql

# Never returned by recall: deprecated entries and pipeline exhaust.
ALWAYS_EXCLUDED_TAGS = ("auto-pattern",)


@dataclass(frozen=True)
class Prefilter:
    kind: str | None = None
    tag: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    now_ms: int = 0  # judges lazily stale entries for a `stale:as-of:` tag

    @classmethod
    def build(
        cls, kind: str | None, tag: str | None, bounds: TimeBounds | None, now_ms: int = 0
    ) -> Prefilter:
        return cls(
            kind=kind,
            tag=normalize_tag(tag) if tag is not None else None,
            since_ms=bounds.since_ms if bounds else None,
            until_ms=bounds.until_ms if bounds else None,
            now_ms=now_ms,
        )

    @property
    def only_always_on(self) -> bool:
        """True when nothing but the always-on exclusions applies."""
        return (
            self.kind is None
            and self.tag is None
            and self.since_ms is None
            and self.until_ms is None
        )

    def without_time(self) -> Prefilter:
        return Prefilter(kind=self.kind, tag=self.tag, now_ms=self.now_ms)

    def sql(self) -> tuple[str, list[Any]]:
        """A WHERE fragment over the alias `e` (entries) and its parameters."""
        marks = ",".join("?" * len(ALWAYS_EXCLUDED_TAGS))
        clauses = [
            "e.status != 'deprecated'",
            f"NOT EXISTS (SELECT 1 FROM tags x WHERE x.entry_id = e.id AND x.tag IN ({marks}))",
        ]
        params: list[Any] = list(ALWAYS_EXCLUDED_TAGS)
        if self.kind is not None:
            clauses.append("e.kind = ?")
            params.append(self.kind)
        if self.tag is not None:
            clause, tag_params = tag_filter_sql("e", self.tag, self.now_ms)
            clauses.append(clause)
            params += tag_params
        if self.since_ms is not None:
            clauses.append("e.created_at >= ?")
            params.append(self.since_ms)
        if self.until_ms is not None:
            clauses.append("e.created_at < ?")
            params.append(self.until_ms)
        return " AND ".join(clauses), params
