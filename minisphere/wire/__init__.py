"""The words of the wire, named once: the contract's enum values and an entry as the service
sends it.

This module sits at the bottom of the layer stack (pydantic and the standard library only), so
every layer can share it: the engine's argument models take these literals, the HTTP answer
models document them, the JSONL transfer format checks its lines with them, and the client
reads answers with them. A value added here is accepted, documented and read everywhere at once.
"""

from __future__ import annotations

from typing import Literal, Optional, get_args

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

Status = Literal["canonical", "draft", "deprecated"]
Kind = Literal["episodic", "semantic"]
Volatility = Literal["durable", "state", "volatile"]
Provenance = Literal["explicit", "inferred", "system"]
ClaimTag = Literal["VERIFIED", "INFERRED", "UNKNOWN"]
EdgeType = Literal[
    "relates_to",
    "supersedes",
    "caused_by",
    "decided",
    "about_person",
    "part_of_project",
    "follows",
    "document_of",
]
EDGE_TYPES: tuple[str, ...] = get_args(EdgeType)
RevisionReason = Literal["append", "update"]
CaptureOutcome = Literal["stored", "blocked"]
# the embedding providers that run a model in the cluster (from the packaged weights)
LOCAL_PROVIDERS: tuple[str, ...] = ("minilm", "minilm-int8")


class WireModel(BaseModel):
    """camelCase on the wire, snake_case in Python; both names are accepted."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, defer_build=True)


class Entry(WireModel):
    """The fields every entry carries wherever it travels: a read's answer, an export line, the
    client's model. Each of those adds its own fields and its own rules for unknown ones."""

    id: str
    content: str
    source: Optional[str]
    created_at: int = Field(description="epoch milliseconds")
    updated_at: int = Field(description="epoch milliseconds; moved only by confirming writes")
    recall_count: int
    importance: float
    claim_tag: Optional[ClaimTag]
    evidence_ref: Optional[str]
    status: Status
    kind: Kind
    volatility: Volatility
    tags: list[str]
