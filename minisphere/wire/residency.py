"""What a workspace actor and the directory hand each other as plain dicts: how a host found its
file (an activation), the answer to a bind, the report of a hibernation and the directory's
answer to one, the snapshot status inside them. Written by the host and the workspace actor,
read by the directory and the ingress: one definition, checked by mypy on both sides."""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict

from minisphere.wire.stored_states import SnapshotManifest

# where a host's copy of the file came from: kept from an earlier stay, shipped by the replica,
# restored from a snapshot, or made empty (a workspace that never acknowledged a write)
ActivationSource = Literal["local", "replica", "snapshot", "new"]


class SkippedVersion(TypedDict):
    """A snapshot version a restore passed over, and why (words any caller may read)."""

    version: str
    error: str


class Activation(TypedDict):
    """How a host found its file when it opened it."""

    source: ActivationSource
    position: int  # the copy's position as opened
    version: NotRequired[str]  # the snapshot restored
    restoreMs: NotRequired[float]  # a restore's duration (replica or snapshot)
    skipped: NotRequired[list[SkippedVersion]]  # corrupt snapshots passed over
    discarded: NotRequired[str]  # why the copy found here was deleted first


class BindAnswer(TypedDict):
    """What a workspace actor answers the bind that gave it its workspace."""

    activation: Activation
    nodeId: str
    pid: int
    openMs: float  # inside the actor, from the call to the open file


class SnapshotStatus(TypedDict):
    """What `GET /v1/workspaces/{id}` shows of a workspace's snapshots."""

    lastSnapshotAt: float | None
    lastVersion: str | None
    lastPosition: int | None
    pendingWrites: int
    snapshots: int
    failures: int
    consecutiveFailures: int
    lastFailureAt: float | None
    lastFailure: str | None
    lastFailureCode: str | None
    retryInS: float | None
    everyWrites: int
    everyS: float


class HostHibernation(TypedDict):
    """What a host reports of its hibernation: the snapshot taken on the way out (if any),
    what went wrong, and how far its copy and the store reach."""

    workspace: str | None  # None: the actor was a spare, holding none
    snapshot: SnapshotManifest | None  # taken on the way out
    error: str | None
    pendingSnapshot: bool  # writes no snapshot holds
    snapshots: SnapshotStatus | None
    position: NotRequired[int]  # the copy's position as it was closed
    storedPosition: NotRequired[int | None]  # the newest position the store holds
    # a forget's clean-up outside the file (replica history, older snapshot versions) unpaid
    cleanupOwed: NotRequired[bool]
    # a thread of the workspace outlived the close: its process is ended, never reused
    threadsLeft: NotRequired[bool]


class SpareReady(TypedDict):
    """What a workspace actor's process answers once its imports are done."""

    name: str | None  # the actor's name
    pid: int
    nodeId: str
    bound: str | None  # the workspace it is bound to, if any
    serving: bool  # that workspace is open and taking calls (not opening, not hibernating)
    runtimeEnv: str  # the runtime env it inherited (any non-empty one makes starts dearer)


class Activity(TypedDict):
    """What the directory reads of a bound actor to choose hibernation victims."""

    lastCallAt: float  # epoch seconds
    inflight: int
    snapshotFailing: bool  # snapshots keep failing with writes no snapshot holds


class OpeningProgress(TypedDict):
    """How far a bind under way has come: the bytes its restore has staged."""

    stagedBytes: int


class ProcessReport(TypedDict):
    """What the spare pool's retirement rule needs of a process handed back."""

    binds: int
    rssBytes: int
    freshRssBytes: int
    pid: int
    nodeId: str


class HibernationReport(HostHibernation):
    """A workspace actor's answer to `hibernate`."""

    process: ProcessReport
    tokensUsed: NotRequired[dict[str, int]]  # token id -> when it was last used (epoch ms)


class Hibernated(HostHibernation):
    """The directory's answer to a hibernation it ran: the actor's report (or the failure that
    stood for it), why it hibernated, and whether its process went back to the spare pool."""

    hibernated: Literal[True]
    reason: str
    recycled: bool


class NotHibernated(TypedDict):
    workspace: str
    hibernated: Literal[False]
    why: str


HibernationAnswer = Hibernated | NotHibernated
