"""The shapes of the answers of a workspace's own calls (entries, writes, reads, recall) and of
the errors, as pydantic models; the service's and the operator's routes answer the shapes in
`service_responses`.

They exist for the published OpenAPI document (`/openapi.json` describes answers as well as
requests) and for the test that validates real answers of every route against it; the routes
return the engine's own JSON, so nothing is converted at request time. Models forbid unknown
fields: a field the engine adds without describing it here fails that test. The entry's own
fields and the enum values are `minisphere.wire`'s, the ones the engine validates arguments with.
"""
from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from minisphere import wire


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---- errors ---------------------------------------------------------------------------------------
class ErrorDetail(Answer):
    code: str = Field(description="stable machine code, e.g. `not_found`, `invalid_argument`")
    message: str


class ErrorBody(Answer):
    error: ErrorDetail


# ---- entries and edges ----------------------------------------------------------------------------
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


# ---- recall ---------------------------------------------------------------------------------------
class ArmDetail(Answer):
    rank: int
    score: float
    rrf: float = Field(description="this arm's share of the fused score: weight / (60 + rank)")


class KeywordDetail(ArmDetail):
    bm25: float
    proximity: float
    feedback: float


class GraphDetail(ArmDetail):
    hop: int
    via: Optional[str]


class RecencyDetail(ArmDetail):
    createdAt: int


class VectorDetail(ArmDetail):
    cosine: float


class RerankFactors(Answer):
    decay: float
    recall: float
    importance: float
    tagOverlap: float
    rolledUp: float
    tagShare: float
    subject: float = Field(description="x3 when the entry starts with a query word too common "
                                       "to search (the speaker a question names), else 1")
    brevity: float = Field(description="1 - lexical share of the fused score x (1 - min(1, "
                                       "characters / 200) ^ 0.5): a short entry's word match "
                                       "counts for less (a greeting shares a question's words, "
                                       "not what it asks); 1 from 200 characters on, and when "
                                       "the query has no searchable words")
    product: float


class MmrDetail(Answer):
    relevance: float
    maxSimilarity: float
    mmr: float


class Breakdown(Answer):
    keyword: Optional[KeywordDetail]
    graph: Optional[GraphDetail]
    recency: Optional[RecencyDetail]
    vector: Optional[VectorDetail] = Field(None, description="only with a vector binding")
    fused: float
    rerank: RerankFactors
    final: float
    mmr: MmrDetail


class RecallItem(Entry):
    score: float
    breakdown: Breakdown
    contentChars: int = Field(description="length of the whole content")
    truncated: bool = Field(description="content was cut by the snippet budget")


class Revalidate(Answer):
    id: str
    staleSince: Optional[int]
    question: str


class QueryFilters(Answer):
    kind: Optional[str]
    tag: Optional[str]


class VectorArmState(Answer):
    arm: Literal["on", "off"]
    provider: str
    reason: Optional[str] = None


class FusionState(Answer):
    lexicalShare: float = Field(description="the lexical arm's share of the fused score, 0..1 (1: lexical order kept)")
    lexicalMargin: float = Field(description="1 - 10th lexical score / 1st: how sharply the lexical head stands out")
    support: float = Field(description="how far the lexical arm backs the vector arm's 20 best hits, 0..1")
    denseMargin: float = Field(description="1 - 20th cosine / best: how sharply the dense head stands out")
    subjectLed: bool = Field(description="the query names a word too common to search (a speaker): "
                                         "the lexical order was kept for it")
    lexicalLed: bool = Field(description="the page kept the lexical order; the cosine only re-sorted it")


class QueryUsed(Answer):
    original: str
    text: str
    terms: list[str]
    droppedTerms: list[str]
    standIns: dict[str, list[str]] = Field(
        default_factory=dict, description="query words no entry contains -> the terms of this "
                                          "workspace searched beside them (a compound's parts, "
                                          "a near spelling)")
    timePhrases: list[str]
    since: Optional[int]
    until: Optional[int]
    sinceIso: Optional[str]
    untilIso: Optional[str]
    boundsRelaxed: bool
    filters: QueryFilters
    arms: dict[str, int] = Field(description="hits per arm")
    vector: Optional[VectorArmState] = Field(None, description="only with a vector binding")
    fusion: Optional[FusionState] = Field(None, description="only where the vector arm ran")


class RecallAnswer(Answer):
    items: list[RecallItem]
    revalidate: list[Revalidate]
    queryUsed: QueryUsed
    timings: dict[str, float] = Field(description="milliseconds per pipeline stage")


METHOD_ANSWERS: dict[str, type[BaseModel]] = {
    "recall": RecallAnswer, "listRecent": EntryList, "getEntry": EntryDetail,
    "connections": ConnectionsAnswer, "graphView": GraphAnswer, "getTags": TagsAnswer,
    "getCount": CountAnswer, "getStats": StatsAnswer, "getBrief": BriefAnswer,
    "capture": CaptureAnswer, "append": EntryDetail, "update": EntryDetail,
    "setStatus": EntryDetail, "forget": ForgetAnswer, "link": LinkAnswer,
    "unlink": UnlinkAnswer, "runStalenessPass": StalenessPassAnswer,
}


ERROR_RESPONSES = {status: {"model": ErrorBody} for status in (400, 401, 403, 404, 409, 413, 429,
                                                              422, 500, 503)}


def answers(model: type[BaseModel], status: int = 200, links: dict | None = None) -> dict:
    """OpenAPI `responses` for a route answering `model` (documentation only: the routes
    return the engine's JSON as is), with the answer's OpenAPI `links` (`minisphere.http.links`)
    when given."""
    answer: dict = {"model": model}
    if links:
        answer["links"] = links
    return {status: answer, **ERROR_RESPONSES}


def json_body(model: type[BaseModel], required: bool | None = None) -> dict:
    """OpenAPI `openapi_extra` documenting a JSON body of `model` (the routes read it with
    `handling.read_spec`, not through FastAPI's own body parsing)."""
    body: dict = {"content": {"application/json": {"schema": model.model_json_schema()}}}
    if required is not None:
        body = {"required": required, **body}
    return {"requestBody": body}
