"""Pydantic models of every contract method's arguments (the validation boundary).

Field names are snake_case in Python and camelCase on the wire (the contract's names); both are
accepted. Unknown fields are refused, types are strict (no "5" for 5, no true for 1).
"""
from __future__ import annotations

from typing import Annotated, Any, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr
from pydantic.alias_generators import to_camel

from minisphere.engine import constants as C
from minisphere.wire import EDGE_TYPES as EDGE_TYPES
from minisphere.wire import ClaimTag, EdgeType, Kind, Provenance, Status, Volatility

# The enum literals are `minisphere.wire`'s, shared with the answer models, the transfer format
# and the client (EDGE_TYPES is re-exported: the contract's surface check reads it here).
Score01 = Annotated[float, Field(ge=0, le=1, strict=True, allow_inf_nan=False)]
Weight = Annotated[float, Field(gt=0, le=1, strict=True, allow_inf_nan=False)]
Id = StrictStr  # shape checked by normalize.check_id so the message is specific
TagList = Annotated[list[StrictStr], Field(max_length=C.MAX_TAGS_PER_ENTRY)]
OptionalSource = Optional[Annotated[StrictStr, Field(max_length=C.MAX_SOURCE_CHARS)]]
OptionalEvidence = Optional[Annotated[StrictStr, Field(max_length=C.MAX_EVIDENCE_REF_CHARS)]]
Hops = Annotated[StrictInt, Field(ge=0, le=C.GRAPH_MAX_HOPS)]


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True,
                              frozen=True)


class NoArgs(Args):
    pass


class IdArgs(Args):
    id: Id


class CaptureArgs(Args):
    content: StrictStr
    tags: TagList = []
    source: OptionalSource = None
    volatility: Optional[Volatility] = None   # None: inferred from the content (volatility.py)
    kind: Optional[Kind] = None               # None: DEFAULT_KIND, entry counted as unclassified
    status: Status = C.DEFAULT_STATUS
    importance: Score01 = C.DEFAULT_IMPORTANCE
    claim_tag: Optional[ClaimTag] = None
    evidence_ref: OptionalEvidence = None


class AppendArgs(Args):
    id: Id
    addition: StrictStr
    tags: TagList = []                        # added to the entry's tags
    importance: Optional[Score01] = None
    claim_tag: Optional[ClaimTag] = None
    evidence_ref: OptionalEvidence = None
    source: OptionalSource = None


class UpdateArgs(Args):
    id: Id
    content: StrictStr


class SetStatusArgs(Args):
    id: Id
    status: Status


class LinkArgs(Args):
    src: Id
    dst: Id
    type: EdgeType
    provenance: Provenance = C.DEFAULT_PROVENANCE
    weight: Weight = C.DEFAULT_EDGE_WEIGHT
    metadata: Optional[dict[str, Any]] = None


class UnlinkArgs(Args):
    src: Id
    dst: Id
    type: EdgeType


class ListRecentArgs(Args):
    n: Annotated[StrictInt, Field(ge=1, le=C.LIST_RECENT_MAX_N)] = C.LIST_RECENT_DEFAULT_N
    tag: Optional[StrictStr] = None


class GraphViewArgs(Args):
    seed_ids: Annotated[list[Id], Field(min_length=1, max_length=50)]
    hops: Hops = C.GRAPH_VIEW_DEFAULT_HOPS


class RecallArgs(Args):
    query: Annotated[StrictStr, Field(max_length=C.MAX_QUERY_CHARS)]
    top_k: Annotated[StrictInt, Field(ge=1, le=C.RECALL_MAX_TOP_K)] = C.RECALL_DEFAULT_TOP_K
    tag: Optional[StrictStr] = None
    kind: Optional[Kind] = None
    hops: Hops = C.RECALL_DEFAULT_HOPS
    full: StrictBool = False


class NoteRecalledArgs(Args):
    """Internal (not routed): the entries a recall returned, whose recall_count goes up."""
    ids: Annotated[list[Id], Field(max_length=C.RECALL_MAX_TOP_K)]


class StalenessPassArgs(Args):
    limit: Annotated[StrictInt, Field(ge=1, le=100_000)] = C.STALENESS_PASS_DEFAULT_LIMIT
