"""The answers of a workspace's own calls, defined once: the engine builds them, the HTTP layer
publishes them (`/openapi.json`, the MCP tools' output schemas), the client annotates what it
hands back with them.

They are `TypedDict`s, not models: an answer is the plain JSON the engine builds and sends as
is, so nothing is converted per request, while mypy checks every place that builds one. Pydantic
reads the same classes for the published schemas (field descriptions and defaults ride in
`Annotated[..., Field(...)]`) and for the tests that validate real answers against them. Keys
are the wire's camelCase; unknown keys are refused, so a field the engine adds without
describing it here fails those tests.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, NotRequired, Optional

from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict

from minisphere.wire import (
    CaptureOutcome,
    ClaimTag,
    Kind,
    Provenance,
    RevisionReason,
    Status,
    Volatility,
)


def field_title(name: str, _field: object) -> str:
    """A property's title in a published schema: its words, "createdAt" -> "Created At"."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|_", " ", name).title()


ANSWER_CONFIG = ConfigDict(extra="forbid", field_title_generator=field_title)


@with_config(ANSWER_CONFIG)
class Entry(TypedDict):
    id: str
    content: str
    source: Optional[str]
    createdAt: Annotated[int, Field(description="epoch milliseconds")]
    updatedAt: Annotated[
        int, Field(description="epoch milliseconds; moved only by confirming writes")
    ]
    recallCount: int
    importance: float
    claimTag: Optional[ClaimTag]
    evidenceRef: Optional[str]
    status: Status
    kind: Kind
    volatility: Volatility
    tags: list[str]
    stale: bool
    staleSince: Optional[int]
    staleDueAt: Optional[int]


@with_config(ANSWER_CONFIG)
class Revision(TypedDict):
    content: str
    at: int
    reason: RevisionReason


@with_config(ANSWER_CONFIG)
class SupersessionChain(TypedDict):
    supersededBy: Annotated[
        Optional[str],
        Field(
            description=(
                "the newest live (not deprecated) entry replacing this one through `supersedes` "
                "edges; null when nothing live replaces it"
            )
        ),
    ]
    chain: Annotated[
        list[str],
        Field(
            description=(
                "this entry, then each replacement in turn up to `supersededBy` (only this entry "
                "when nothing live replaces it)"
            )
        ),
    ]
    supersedes: Annotated[
        list[str], Field(description="the entries this one replaces directly, oldest first")
    ]


@with_config(ANSWER_CONFIG)
class EntryDetail(Entry):
    revisionCount: int
    edgeCount: int
    revisions: Annotated[list[Revision], Field(description="the newest revisions, newest first")]
    supersession: SupersessionChain


@with_config(ANSWER_CONFIG)
class Edge(TypedDict):
    src: str
    dst: str
    type: str
    weight: float
    provenance: Provenance
    metadata: Optional[dict[str, Any]]
    createdAt: int
    updatedAt: int
    metadataOmitted: NotRequired[
        Annotated[
            bool,
            Field(
                False,
                description=(
                    "graphView only: the metadata is larger than the answer shows (it is null here); "
                    "connections of either end has it whole"
                ),
            ),
        ]
    ]
    metadataBytes: NotRequired[
        Annotated[
            Optional[int],
            Field(None, description="the left-out metadata's size (UTF-8 bytes of its JSON)"),
        ]
    ]


# ---- writes ---------------------------------------------------------------------------------------
@with_config(ANSWER_CONFIG)
class NearEntry(TypedDict):
    id: str
    cosine: float


@with_config(ANSWER_CONFIG)
class SupersessionHint(TypedDict):
    """The vector binding's guess that a new capture replaces an earlier entry: the same
    statement with a detail changed. A hint, never acted on by the service."""

    id: Annotated[str, Field(description="the earlier entry the capture may replace")]
    cosine: float
    before: Annotated[list[str], Field(description="the earlier entry's changed details")]
    after: Annotated[list[str], Field(description="the capture's details in their place")]


@with_config(ANSWER_CONFIG)
class CaptureAnswer(TypedDict):
    outcome: CaptureOutcome
    id: NotRequired[Annotated[Optional[str], Field(None, description="the new entry (stored)")]]
    matchId: NotRequired[
        Annotated[Optional[str], Field(None, description="the entry it duplicates (blocked)")]
    ]
    confirmed: NotRequired[
        Annotated[
            Optional[bool],
            Field(
                None,
                description=("an exact re-capture from another named source confirmed the match"),
            ),
        ]
    ]
    cosine: NotRequired[
        Annotated[Optional[float], Field(None, description="semantic duplicate: its similarity")]
    ]
    semantic: NotRequired[Annotated[Optional[bool], Field(None)]]
    duplicateCandidateOf: NotRequired[Annotated[Optional[NearEntry], Field(None)]]
    autoLinked: NotRequired[Annotated[Optional[list[NearEntry]], Field(None)]]
    supersessionHint: NotRequired[Annotated[Optional[SupersessionHint], Field(None)]]


@with_config(ANSWER_CONFIG)
class ForgetAnswer(TypedDict):
    forgotten: bool
    id: str


@with_config(ANSWER_CONFIG)
class LinkAnswer(TypedDict):
    edge: Edge
    created: bool


@with_config(ANSWER_CONFIG)
class UnlinkAnswer(TypedDict):
    removed: bool


@with_config(ANSWER_CONFIG)
class StalenessPassAnswer(TypedDict):
    scanned: int
    marked: int
    cleared: int
    remaining: int
    nextDueAt: Optional[int]


# ---- reads ----------------------------------------------------------------------------------------
@with_config(ANSWER_CONFIG)
class ListedEntry(Entry):
    """An entry in a list-style read: its content is cut at LIST_CONTENT_MAX_CHARS."""

    truncated: NotRequired[
        Annotated[bool, Field(False, description="the content was cut; getEntry has all of it")]
    ]
    contentChars: NotRequired[
        Annotated[Optional[int], Field(None, description="the full content's length, when cut")]
    ]


@with_config(ANSWER_CONFIG)
class EntryList(TypedDict):
    items: list[ListedEntry]


@with_config(ANSWER_CONFIG)
class Connection(TypedDict):
    edge: Edge
    direction: Literal["in", "out", "both"]
    entry: ListedEntry


@with_config(ANSWER_CONFIG)
class ConnectionsAnswer(TypedDict):
    id: str
    items: list[Connection]
    supersession: SupersessionChain


@with_config(ANSWER_CONFIG)
class GraphNode(ListedEntry):
    hop: int


@with_config(ANSWER_CONFIG)
class GraphAnswer(TypedDict):
    nodes: list[GraphNode]
    edges: list[Edge]
    truncated: bool
    missingSeedIds: list[str]


@with_config(ANSWER_CONFIG)
class TagCount(TypedDict):
    tag: str
    count: int


@with_config(ANSWER_CONFIG)
class TagsAnswer(TypedDict):
    tags: list[TagCount]
    truncated: bool


@with_config(ANSWER_CONFIG)
class CountAnswer(TypedDict):
    count: int


@with_config(ANSWER_CONFIG)
class StatsAnswer(TypedDict):
    count: int
    avgImportance: float
    unclassified: int
    topTopics: list[TagCount]
    byStatus: dict[str, int]
    byKind: dict[str, int]
    byVolatility: dict[str, int]
    edgeCount: int


@with_config(ANSWER_CONFIG)
class Preview(TypedDict):
    id: str
    preview: str
    createdAt: int
    updatedAt: int
    kind: str
    tags: list[str]
    importance: float
    recallCount: int


@with_config(ANSWER_CONFIG)
class RecentActivity(TypedDict):
    windowMs: int
    captured: int
    revised: int
    entries: list[Preview]


@with_config(ANSWER_CONFIG)
class Revalidation(TypedDict):
    """An open supersession hint: `entry` may replace `candidate`; link `supersedes` to
    confirm, unlink their `relates_to` hint edge to dismiss."""

    entry: Preview
    candidate: Preview
    before: list[str]
    after: list[str]


@with_config(ANSWER_CONFIG)
class BriefAnswer(TypedDict):
    generatedAt: int
    recentActivity: RecentActivity
    topTopics: list[TagCount]
    resurface: list[Preview]
    revalidate: Annotated[
        list[Revalidation],
        Field(description="open supersession hints of the vector binding, newest first"),
    ]
    count: int


@with_config(ANSWER_CONFIG)
class NotedAnswer(TypedDict):
    """The engine's own follow-up write after a recall (never routed)."""

    noted: int
