"""The shapes of the answers a workspace's own calls give an agent: entries and edges, writes and
reads (recall's are in `recall_responses`). The entry's own fields and the enum values are
`minisphere.wire`'s, the ones the engine validates arguments with."""
from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import Field

from minisphere import wire
from minisphere.http.answer_model import Answer


class Entry(Answer, wire.Entry):
    stale: bool
    staleSince: Optional[int]
    staleDueAt: Optional[int]


class Revision(Answer):
    content: str
    at: int
    reason: wire.RevisionReason


class EntryDetail(Entry):
    revisionCount: int
    edgeCount: int
    revisions: list[Revision] = Field(description="the newest revisions, newest first")


class Edge(Answer):
    src: str
    dst: str
    type: str
    weight: float
    provenance: wire.Provenance
    metadata: Optional[dict[str, Any]]
    createdAt: int
    updatedAt: int
    metadataOmitted: bool = Field(False, description=(
        "graphView only: the metadata is larger than the answer shows (it is null here); "
        "connections of either end has it whole"))
    metadataBytes: Optional[int] = Field(
        None, description="the left-out metadata's size (UTF-8 bytes of its JSON)")


# ---- writes ---------------------------------------------------------------------------------------
class NearEntry(Answer):
    id: str
    cosine: float


class CaptureAnswer(Answer):
    outcome: wire.CaptureOutcome
    id: Optional[str] = Field(None, description="the new entry (stored)")
    matchId: Optional[str] = Field(None, description="the entry it duplicates (blocked)")
    confirmed: Optional[bool] = Field(None, description="an exact re-capture from another "
                                                        "named source confirmed the match")
    cosine: Optional[float] = Field(None, description="semantic duplicate: its similarity")
    semantic: Optional[bool] = None
    duplicateCandidateOf: Optional[NearEntry] = None
    autoLinked: Optional[list[NearEntry]] = None


class ForgetAnswer(Answer):
    forgotten: bool
    id: str


class LinkAnswer(Answer):
    edge: Edge
    created: bool


class UnlinkAnswer(Answer):
    removed: bool


class StalenessPassAnswer(Answer):
    scanned: int
    marked: int
    cleared: int
    remaining: int
    nextDueAt: Optional[int]


# ---- reads ----------------------------------------------------------------------------------------
class ListedEntry(Entry):
    """An entry in a list-style read: its content is cut at LIST_CONTENT_MAX_CHARS."""
    truncated: bool = Field(False, description="the content was cut; getEntry has all of it")
    contentChars: Optional[int] = Field(None, description="the full content's length, when cut")


class EntryList(Answer):
    items: list[ListedEntry]


class Connection(Answer):
    edge: Edge
    direction: Literal["in", "out", "both"]
    entry: ListedEntry


class ConnectionsAnswer(Answer):
    id: str
    items: list[Connection]


class GraphNode(ListedEntry):
    hop: int


class GraphAnswer(Answer):
    nodes: list[GraphNode]
    edges: list[Edge]
    truncated: bool
    missingSeedIds: list[str]


class TagCount(Answer):
    tag: str
    count: int


class TagsAnswer(Answer):
    tags: list[TagCount]
    truncated: bool


class CountAnswer(Answer):
    count: int


class StatsAnswer(Answer):
    count: int
    avgImportance: float
    unclassified: int
    topTopics: list[TagCount]
    byStatus: dict[str, int]
    byKind: dict[str, int]
    byVolatility: dict[str, int]
    edgeCount: int


class Preview(Answer):
    id: str
    preview: str
    createdAt: int
    updatedAt: int
    kind: str
    tags: list[str]
    importance: float
    recallCount: int


class RecentActivity(Answer):
    windowMs: int
    captured: int
    revised: int
    entries: list[Preview]


class BriefAnswer(Answer):
    generatedAt: int
    recentActivity: RecentActivity
    topTopics: list[TagCount]
    resurface: list[Preview]
    count: int
