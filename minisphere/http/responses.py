"""The shapes of every answer the HTTP surface gives, as pydantic models.

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
from minisphere.engine.methods import Access
from minisphere.maintenance.runs import OUTCOMES, TRIGGERS


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
    lexicalLed: bool = Field(description="the page kept the lexical order; the cosine only re-sorted it")


class QueryUsed(Answer):
    original: str
    text: str
    terms: list[str]
    droppedTerms: list[str]
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


# ---- the service and its admin routes --------------------------------------------------------------
class Health(Answer):
    status: Literal["ok"]


class PinnedContract(Answer):
    name: str
    version: str
    sha256: str
    file: str
    role: Literal["text", "surface"]
    active: bool


class RoutedMethod(Answer):
    name: str
    access: Access
    positional: list[str]


class ContractsAnswer(Answer):
    contracts: list[PinnedContract]
    methods: list[RoutedMethod]


class BornWith(Answer):
    name: str
    version: str
    sha256: str
    reference: str = Field(description="NAME@version+sha256:<hex>")


class WorkspaceRecord(Answer):
    id: str
    createdAt: int
    updatedAt: int
    state: str = Field(description="active | hibernated | deleting")
    contracts: list[BornWith] = Field(description="the contract the workspace was born with")
    blueprint: dict[str, Any]
    label: Optional[str]
    nodeId: Optional[str]
    lastActiveAt: Optional[int]
    generation: Optional[str] = Field(description="this creation of the id: its snapshots are "
                                                  "stored under it (null: created before "
                                                  "generations existed)")


class Location(Answer):
    generation: Optional[str] = Field(description="this creation of the id")
    nodeId: Optional[str] = Field(description="the node holding the live copy")
    epoch: int = Field(description="fencing token: one more on every activation; a host "
                                   "holding an older one can neither open nor write the file")
    position: int = Field(description="committed changes acknowledged so far: no copy below "
                                      "this is ever opened")
    storedPosition: int = Field(description="the newest position held by the snapshot store "
                                            "(below `position`: only the live copy's node has "
                                            "the newest writes)")


class WorkspaceDetail(WorkspaceRecord):
    resident: bool = Field(description="an actor holds it now (else it is hibernated)")
    durability: dict[str, Any] = Field(description="residency, placement, snapshot status")
    location: Location = Field(description="the location record: where the workspace lives "
                                           "and how far its copies reach")


class Hibernated(Answer):
    workspace: str
    hibernated: bool = Field(description="false: it was not resident")
    why: Optional[str]
    snapshot: Optional[str] = Field(description="the version taken on the way, if any")
    pendingSnapshot: bool


class CreatedWorkspace(Answer):
    workspace: WorkspaceRecord
    token: str = Field(description="a write token of the workspace, shown only in this answer")
    tokenId: str = Field(description="its id (to list or revoke it)")


class TokenIssued(Answer):
    tokenId: str
    token: str = Field(description="the secret, shown only in this answer")
    scope: str = Field(description="read | write")
    label: Optional[str]
    expiresAt: Optional[int] = Field(description="epoch ms; null: never")


class TokenInfo(Answer):
    tokenId: str
    scope: str
    label: Optional[str]
    createdAt: int
    expiresAt: Optional[int]
    lastUsedAt: Optional[int] = Field(description="epoch ms, to within a minute; null: never")


class TokenList(Answer):
    items: list[TokenInfo]


class TokenRevoked(Answer):
    revoked: str


class WhoAmI(Answer):
    kind: str = Field(description="admin | workspace")
    workspace: Optional[str] = None
    tokenId: Optional[str] = None
    scope: Optional[str] = None
    label: Optional[str] = None
    expiresAt: Optional[int] = None


class WorkspaceList(Answer):
    items: list[WorkspaceRecord]


class Deleted(Answer):
    deleted: str
    snapshotsDeleted: bool = Field(description="false: the snapshot store failed; the directory "
                                               "keeps retrying, and a workspace created again "
                                               "with this id never sees them")


class SnapshotManifest(Answer):
    model_config = ConfigDict(extra="allow")     # a newer format may add fields
    version: str
    workspace: str
    format: Optional[int] = None
    seq: Optional[int] = None
    createdAt: Optional[str] = None
    createdAtMs: Optional[int] = None
    reason: Optional[str] = None
    schemaVersion: Optional[int] = None
    entryCount: Optional[int] = None
    compression: Optional[str] = None
    rawBytes: Optional[int] = None
    rawSha256: Optional[str] = None
    compressedBytes: Optional[int] = None
    compressedSha256: Optional[str] = None
    blobKey: Optional[str] = None
    restoredFrom: Optional[str] = Field(None, description="reason restore: the version it "
                                                          "stores again")
    tookMs: Optional[float] = None
    error: Optional[str] = Field(None, description="set when the manifest cannot be read")


class SnapshotList(Answer):
    items: list[SnapshotManifest]


class Restored(Answer):
    workspace: str
    version: str
    entryCount: Optional[int]
    previousFileKeptAt: Optional[str]
    tookMs: float
    newestVersion: str = Field(description="the version that now holds the restored state: "
                                           "a later activation or restore comes back to it")


class RestoredToMoment(Answer):
    workspace: str
    moment: str = Field(description="the moment restored (UTC)")
    position: int = Field(description="the restored state's position: a new state, above "
                                      "every position the workspace had")
    aside: Optional[str] = Field(description="where the replaced file was kept on its node")


class Pruned(Answer):
    workspace: str
    snapshot: Optional[SnapshotManifest] = Field(description="taken first, when the file had "
                                                             "changed since the newest version")
    deleted: list[str]
    kept: list[str]


class MaintenanceRun(Answer):
    runId: str
    workspaceId: str
    trigger: Literal[*TRIGGERS]
    startedAt: int
    finishedAt: Optional[int]
    outcome: Optional[Literal[*OUTCOMES]]
    calls: int
    scanned: int
    marked: int
    cleared: int
    remaining: Optional[int]
    nextDueAt: Optional[int]
    error: Optional[str]


class MaintenanceRuns(Answer):
    items: list[MaintenanceRun]


class ImportReport(Answer):
    entries: int
    edges: int
    duplicateIds: int
    duplicateContent: int
    duplicateEdges: int
    orphanEdges: int
    applied: Optional[int] = Field(None, description="data lines applied so far (a chunk)")
    expected: int
    lines: Optional[int] = Field(None, description="data lines in the file (final chunk)")
    resumedFrom: Optional[int] = None
    complete: Optional[bool] = None


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
