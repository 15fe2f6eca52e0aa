"""The shapes of the answers of the service's own routes and the operator's: health, contracts,
workspaces and their location, tokens, snapshots, restores, maintenance runs and imports. The
workspace calls' answers, and the operator's that the actors build (`wire.records`,
`wire.stored_states`), are `minisphere.wire`'s TypedDicts; these share their rules through
`answer_model`.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field, with_config
from typing_extensions import TypedDict

from minisphere.engine.methods import Access
from minisphere.http.answer_model import Answer
from minisphere.wire.answers import ANSWER_CONFIG
from minisphere.wire.records import MaintenanceRun, TokenInfo, WorkspaceRecord
from minisphere.wire.stored_states import SnapshotManifest


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


# the ingress's answer to a manual hibernation (a TypedDict like the wire's: built as is)
@with_config(ANSWER_CONFIG)
class Hibernated(TypedDict):
    workspace: str
    hibernated: Annotated[bool, Field(description="false: it was not resident")]
    why: Optional[str]
    snapshot: Annotated[Optional[str], Field(description="the version taken on the way, if any")]
    pendingSnapshot: bool


class TokenList(Answer):
    items: list[TokenInfo]


class WhoAmI(Answer):
    kind: str = Field(description="admin | workspace")
    workspace: Optional[str] = None
    tokenId: Optional[str] = None
    scope: Optional[str] = None
    label: Optional[str] = None
    expiresAt: Optional[int] = None


class WorkspaceList(Answer):
    items: list[WorkspaceRecord]


class SnapshotList(Answer):
    items: list[SnapshotManifest]


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
