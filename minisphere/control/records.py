"""The control plane's records as its callers receive them: a workspace, where it lives, its
tokens. The operator's routes answer these dicts as they are and publish these same classes
(`minisphere.http.service_responses`), so the record and its documented shape are one
definition, checked by mypy where the control plane builds them."""
from __future__ import annotations

from typing import Annotated, Any, Optional

from pydantic import Field, with_config
from typing_extensions import TypedDict

from minisphere.wire.answers import ANSWER_CONFIG


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
    contracts: Annotated[list[BornWith], Field(
        description="the contract the workspace was born with")]
    blueprint: dict[str, Any]
    label: Optional[str]
    nodeId: Optional[str]
    lastActiveAt: Optional[int]
    generation: Annotated[Optional[str], Field(description=(
        "this creation of the id: its snapshots are stored under it (null: created before "
        "generations existed)"))]


# one workspace's location record, as the directory answers it (no docstring: pydantic would
# publish it as the schema's description)
@with_config(ANSWER_CONFIG)
class Location(TypedDict):
    generation: Annotated[Optional[str], Field(description="this creation of the id")]
    nodeId: Annotated[Optional[str], Field(description="the node holding the live copy")]
    epoch: Annotated[int, Field(description=(
        "fencing token: one more on every activation; a host holding an older one can neither "
        "open nor write the file"))]
    position: Annotated[int, Field(description=(
        "committed changes acknowledged so far: no copy below this is ever opened"))]
    storedPosition: Annotated[int, Field(description=(
        "the newest position held by the snapshot store (below `position`: only the live "
        "copy's node has the newest writes)"))]


# a token just issued: the only answer that holds its secret
@with_config(ANSWER_CONFIG)
class TokenIssued(TypedDict):
    tokenId: str
    token: Annotated[str, Field(description="the secret, shown only in this answer")]
    scope: Annotated[str, Field(description="read | write")]
    label: Optional[str]
    expiresAt: Annotated[Optional[int], Field(description="epoch ms; null: never")]


@with_config(ANSWER_CONFIG)
class TokenInfo(TypedDict):
    tokenId: str
    scope: str
    label: Optional[str]
    createdAt: int
    expiresAt: Optional[int]
    lastUsedAt: Annotated[Optional[int], Field(
        description="epoch ms, to within a minute; null: never")]
