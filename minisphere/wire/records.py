"""The operator's records as the control plane, the directory and the maintenance ledger hand
them out: a workspace, where it lives, its creation and deletion, its tokens, a maintenance
run. The operator's routes answer these dicts as they are and publish these same classes, so a
record and its documented shape are one definition, checked by mypy where they are built."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, get_args

from pydantic import Field, with_config
from typing_extensions import TypedDict

from minisphere.wire.answers import ANSWER_CONFIG

Trigger = Literal["cron", "manual"]
Outcome = Literal["ok", "error", "skipped"]
TRIGGERS: tuple[Trigger, ...] = get_args(Trigger)
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)


@with_config(ANSWER_CONFIG)
class BornWith(TypedDict):
    name: str
    version: str
    sha256: str
    reference: Annotated[str, Field(description="NAME@version+sha256:<hex>")]


@with_config(ANSWER_CONFIG)
class WorkspaceRecord(TypedDict):
    id: str
    createdAt: int
    updatedAt: int
    state: Annotated[str, Field(description="active | hibernated | deleting")]
    contracts: Annotated[
        list[BornWith], Field(description="the contract the workspace was born with")
    ]
    blueprint: dict[str, Any]
    label: Optional[str]
    nodeId: Optional[str]
    lastActiveAt: Optional[int]
    generation: Annotated[
        Optional[str],
        Field(
            description=(
                "this creation of the id: its snapshots are stored under it (null: created before "
                "generations existed)"
            )
        ),
    ]


# one workspace's location record, as the directory answers it (no docstring: pydantic would
# publish it as the schema's description)
@with_config(ANSWER_CONFIG)
class Location(TypedDict):
    generation: Annotated[Optional[str], Field(description="this creation of the id")]
    nodeId: Annotated[Optional[str], Field(description="the node holding the live copy")]
    epoch: Annotated[
        int,
        Field(
            description=(
                "fencing token: one more on every activation; a host holding an older one can neither "
                "open nor write the file"
            )
        ),
    ]
    position: Annotated[
        int,
        Field(
            description=("committed changes acknowledged so far: no copy below this is ever opened")
        ),
    ]
    storedPosition: Annotated[
        int,
        Field(
            description=(
                "the newest position held by the snapshot store (below `position`: only the live "
                "copy's node has the newest writes)"
            )
        ),
    ]


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


@with_config(ANSWER_CONFIG)
class CreatedWorkspace(TypedDict):
    workspace: WorkspaceRecord
    token: Annotated[
        str, Field(description="a write token of the workspace, shown only in this answer")
    ]
    tokenId: Annotated[str, Field(description="its id (to list or revoke it)")]


@with_config(ANSWER_CONFIG)
class Deleted(TypedDict):
    deleted: str
    snapshotsDeleted: Annotated[
        bool,
        Field(
            description="false: the snapshot store failed; the directory "
            "keeps retrying, and a workspace created again "
            "with this id never sees them"
        ),
    ]


# a token just issued: the only answer that holds its secret
@with_config(ANSWER_CONFIG)
class TokenIssued(TypedDict):
    tokenId: str
    token: Annotated[str, Field(description="the secret, shown only in this answer")]
    scope: Annotated[str, Field(description="read | write")]
    label: Optional[str]
    expiresAt: Annotated[Optional[int], Field(description="epoch ms; null: never")]


@with_config(ANSWER_CONFIG)
class TokenRevoked(TypedDict):
    revoked: str


class AdminIdentity(TypedDict):
    kind: Literal["admin"]


class WorkspaceTokenIdentity(TypedDict):
    """A workspace token as its holder may see it (`whoami`)."""

    kind: Literal["workspace"]
    workspace: str
    tokenId: str
    scope: str
    label: str | None
    expiresAt: int | None


# what `whoami` answers of a token (the published `WhoAmI` documents both as one object)
Identity = AdminIdentity | WorkspaceTokenIdentity


@with_config(ANSWER_CONFIG)
class TokenInfo(TypedDict):
    tokenId: str
    scope: str
    label: Optional[str]
    createdAt: int
    expiresAt: Optional[int]
    lastUsedAt: Annotated[
        Optional[int], Field(description="epoch ms, to within a minute; null: never")
    ]


# one maintenance run's audit row: what the ledger stores and lists
@with_config(ANSWER_CONFIG)
class MaintenanceRun(TypedDict):
    runId: str
    workspaceId: str
    trigger: Trigger
    startedAt: int
    finishedAt: Optional[int]
    outcome: Optional[Outcome]
    calls: int
    scanned: int
    marked: int
    cleared: int
    remaining: Optional[int]
    nextDueAt: Optional[int]
    error: Optional[str]


# one workspace's due state in the maintenance ledger: what its last staleness pass answered
# (requested at checkedAt) and the earliest due-changing write it may not have seen
class DueState(TypedDict):
    nextDueAt: Optional[int]
    remaining: int
    checkedAt: int
    dirtySince: Optional[int]
