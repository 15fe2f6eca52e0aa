"""The shapes of the answers of the service's own routes and the operator's: health, contracts,
workspaces and their location, tokens, snapshots, restores, maintenance runs and imports (the
workspace calls' answers are `minisphere.wire`'s; these share their rules through
`answer_model`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import ConfigDict, Field, with_config

from minisphere.engine.methods import Access
from minisphere.http.answer_model import Answer
from minisphere.wire.answers import ANSWER_CONFIG
from minisphere.wire.records import Location, MaintenanceRun, TokenInfo, WorkspaceRecord


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


@with_config(ANSWER_CONFIG)
class WorkspaceDetail(WorkspaceRecord):
    resident: Annotated[bool, Field(description="an actor holds it now (else it is hibernated)")]
    durability: Annotated[
        dict[str, Any], Field(description="residency, placement, snapshot status")
    ]
    location: Annotated[
        Location,
        Field(
            description=(
                "the location record: where the workspace lives and how far its copies reach"
            )
        ),
    ]


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
    snapshotsDeleted: bool = Field(
        description="false: the snapshot store failed; the directory "
        "keeps retrying, and a workspace created again "
        "with this id never sees them"
    )


class SnapshotManifest(Answer):
    model_config = ConfigDict(extra="allow")  # a newer format may add fields
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
    restoredFrom: Optional[str] = Field(
        None, description="reason restore: the version it stores again"
    )
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
    newestVersion: str = Field(
        description="the version that now holds the restored state: "
        "a later activation or restore comes back to it"
    )


class RestoredToMoment(Answer):
    workspace: str
    moment: str = Field(description="the moment restored (UTC)")
    position: int = Field(
        description="the restored state's position: a new state, above "
        "every position the workspace had"
    )
    aside: Optional[str] = Field(description="where the replaced file was kept on its node")


class FileVectors(Answer):
    provider: Optional[str] = Field(description="whose vectors the file holds (None: no binding)")
    dim: Optional[int]
    missing: Optional[int] = Field(description="entries that have no vector yet")


class RebindProgress(Answer):
    provider: str
    state: Literal["re-embedding", "done", "failed", "superseded"]
    embedded: int = Field(description="entries embedded again so far")
    total: Optional[int] = Field(description="entries to embed (None until counted)")
    error: Optional[str]
    startedAt: float = Field(description="epoch seconds")
    finishedAt: Optional[float]


class VectorBindingState(Answer):
    workspace: str
    blueprint: Optional[dict[str, Any]] = Field(
        description="the binding the workspace's blueprint names: what the file is brought to"
    )
    file: FileVectors
    rebind: Optional[RebindProgress] = Field(
        description="the rebind under way or last done while the workspace is resident"
    )


class Pruned(Answer):
    workspace: str
    snapshot: Optional[SnapshotManifest] = Field(
        description="taken first, when the file had changed since the newest version"
    )
    deleted: list[str]
    kept: list[str]


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
