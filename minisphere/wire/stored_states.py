"""The operator's answers about a workspace's stored states: a snapshot version's manifest, a
restore, a restore to a moment, a pruning, and the state of the file's vector binding. The
workspace actor builds them over its file and the snapshot store, the ingress hands them on
(adding the workspace's id and its blueprint's binding where the actor cannot know them), and
the HTTP routes answer them as they are and publish these same classes
(`minisphere.http.service_responses`): one definition, checked by mypy where each is built.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, Optional

from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict

from minisphere.wire.answers import ANSWER_CONFIG, field_title

# a version's fields are optional where an older format lacked them (see the defaults of
# `minisphere.durability.snapshots.manifest`); a newer format may add fields, kept as they are
OptionalCount = Annotated[Optional[int], Field(default=None)]
OptionalText = Annotated[Optional[str], Field(default=None)]


@with_config(ConfigDict(extra="allow", field_title_generator=field_title))
class SnapshotManifest(TypedDict):
    version: str
    workspace: str
    format: NotRequired[OptionalCount]
    seq: NotRequired[OptionalCount]
    createdAt: NotRequired[OptionalText]
    createdAtMs: NotRequired[OptionalCount]
    reason: NotRequired[OptionalText]
    schemaVersion: NotRequired[OptionalCount]
    entryCount: NotRequired[OptionalCount]
    compression: NotRequired[OptionalText]
    rawBytes: NotRequired[OptionalCount]
    rawSha256: NotRequired[OptionalText]
    compressedBytes: NotRequired[OptionalCount]
    compressedSha256: NotRequired[OptionalText]
    blobKey: NotRequired[OptionalText]
    restoredFrom: NotRequired[
        Annotated[
            Optional[str],
            Field(default=None, description="reason restore: the version it stores again"),
        ]
    ]
    tookMs: NotRequired[Annotated[Optional[float], Field(default=None)]]
    error: NotRequired[
        Annotated[
            Optional[str],
            Field(default=None, description="set when the manifest cannot be read"),
        ]
    ]
    position: NotRequired[
        Annotated[
            Optional[int],
            Field(default=None, description="the position of the state this version holds"),
        ]
    ]


@with_config(ANSWER_CONFIG)
class Restored(TypedDict):
    workspace: str
    version: str
    entryCount: Optional[int]
    previousFileKeptAt: Optional[str]
    tookMs: float
    newestVersion: Annotated[
        str,
        Field(
            description="the version that now holds the restored state: "
            "a later activation or restore comes back to it"
        ),
    ]


@with_config(ANSWER_CONFIG)
class RestoredToMoment(TypedDict):
    workspace: str
    moment: Annotated[str, Field(description="the moment restored (UTC)")]
    position: Annotated[
        int,
        Field(
            description="the restored state's position: a new state, above "
            "every position the workspace had"
        ),
    ]
    aside: Annotated[
        Optional[str], Field(description="where the replaced file was kept on its node")
    ]


@with_config(ANSWER_CONFIG)
class Pruned(TypedDict):
    workspace: str
    snapshot: Annotated[
        Optional[SnapshotManifest],
        Field(description="taken first, when the file had changed since the newest version"),
    ]
    deleted: list[str]
    kept: list[str]


@with_config(ANSWER_CONFIG)
class FileVectors(TypedDict):
    provider: Annotated[
        Optional[str], Field(description="whose vectors the file holds (None: no binding)")
    ]
    dim: Optional[int]
    missing: Annotated[Optional[int], Field(description="entries that have no vector yet")]


RebindState = Literal["re-embedding", "done", "failed", "superseded"]


@with_config(ANSWER_CONFIG)
class RebindProgress(TypedDict):
    provider: str
    state: RebindState
    embedded: Annotated[int, Field(description="entries embedded again so far")]
    total: Annotated[Optional[int], Field(description="entries to embed (None until counted)")]
    error: Optional[str]
    startedAt: Annotated[float, Field(description="epoch seconds")]
    finishedAt: Optional[float]


class FileBinding(TypedDict):
    """What a workspace actor answers of its file's binding: the file's, and the rebind under
    way or last done while it has been resident."""

    file: FileVectors
    rebind: RebindProgress | None


@with_config(ANSWER_CONFIG)
class VectorBindingState(TypedDict):
    workspace: str
    blueprint: Annotated[
        Optional[dict[str, Any]],
        Field(
            description="the binding the workspace's blueprint names: what the file is brought to"
        ),
    ]
    file: FileVectors
    rebind: Annotated[
        Optional[RebindProgress],
        Field(description="the rebind under way or last done while the workspace is resident"),
    ]


def binding_answer(
    workspace_id: str, blueprint: dict[str, Any] | None, state: FileBinding
) -> VectorBindingState:
    """The operator's answer about a workspace's vector binding: what its blueprint names
    beside what its actor answered of the file."""
    return {
        "workspace": workspace_id,
        "blueprint": blueprint,
        "file": state["file"],
        "rebind": state["rebind"],
    }
