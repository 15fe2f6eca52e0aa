"""Pydantic models of every contract method's arguments (the validation boundary).

Field names are snake_case in Python and camelCase on the wire (the contract's names); both are
accepted. Unknown fields are refused, types are strict (no "5" for 5, no true for 1; 5.0 is the
integer 5, as in JSON Schema).
"""

from __future__ import annotations

from typing import Annotated, Any, Optional, TypeAlias

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, StrictStr
from pydantic.alias_generators import to_camel

from minisphere.engine import constants as C
from minisphere.wire import EDGE_TYPES as EDGE_TYPES
from minisphere.wire import ClaimTag, EdgeType, Kind, Provenance, Status, Volatility

# The enum literals are `minisphere.wire`'s, shared with the answer models, the transfer format
# and the client (EDGE_TYPES is re-exported: the contract's surface check reads it here).


def _integral(value: Any) -> Any:
    """5.0 as 5: JSON has one number type and JSON Schema's `integer` (the published schema's
    type) admits any number without a fractional part, which many JSON encoders write as 5.0.
    Strings, booleans and fractions are still refused by StrictInt."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# What an integer argument's type carries after its bounds: 5.0 is taken as 5 (see _integral)
INTEGRAL = BeforeValidator(_integral)


Score01 = Annotated[float, Field(ge=0, le=1, strict=True, allow_inf_nan=False)]
Weight = Annotated[float, Field(gt=0, le=1, strict=True, allow_inf_nan=False)]

# The shapes below are checked by the engine's own functions (normalize.check_id,
# normalize.normalize_tag, writes.check_content), whose messages name the rule broken; the
# patterns here only publish the same rules (from the same constants) in the JSON schema, so a
# client or a fuzzer reading the schema sends what the engine accepts. They are not enforced by
# pydantic a second time: its regex engine and its messages differ from the engine's checks.
Id = Annotated[
    StrictStr,
    Field(json_schema_extra={"pattern": C.ID_PATTERN, "description": "a lower-case UUID"}),
]
Text = Annotated[
    StrictStr,
    Field(
        json_schema_extra={
            "pattern": C.TEXT_PATTERN,
            "description": f"not blank, no NUL, at most {C.MAX_CONTENT_BYTES} UTF-8 bytes",
        }
    ),
]
_TAG_RULES = (
    f"normalized (NFKC, lower-case, whitespace runs to '-'), then 1 to "
    f"{C.MAX_TAG_CHARS} characters with no control, format, private-use or unassigned "
    "character"
)
Tag = Annotated[
    StrictStr,
    Field(
        json_schema_extra={
            "pattern": C.TAG_PATTERN,
            "maxLength": C.MAX_TAG_CHARS,
            "description": f"{_TAG_RULES}; tags starting with 'stale:' are reserved to the engine",
        }
    ),
]
# a tag to filter by: the same rules, its length left to the description (the pinned contract
# surface compares a top-level argument's bounds, and lists none for these)
TagFilter = Annotated[
    StrictStr,
    Field(json_schema_extra={"pattern": C.TAG_PATTERN, "description": f"one tag, {_TAG_RULES}"}),
]
# checked by the engine (as_of.parse_as_of: the shape, and not in the future); published here
AsOf = Optional[
    Annotated[
        StrictStr,
        Field(
            max_length=C.AS_OF_MAX_CHARS,
            json_schema_extra={
                "format": "date-time",
                "description": "an RFC 3339 date-time: answer from what the workspace held then",
            },
        ),
    ]
]
TagList = Annotated[list[Tag], Field(max_length=C.MAX_TAGS_PER_ENTRY)]
OptionalSource = Optional[Annotated[StrictStr, Field(max_length=C.MAX_SOURCE_CHARS)]]
OptionalEvidence = Optional[Annotated[StrictStr, Field(max_length=C.MAX_EVIDENCE_REF_CHARS)]]
# integers in bounds (the bounds go first, so the schema shows them as JSON Schema's minimum and
# maximum)
Hops: TypeAlias = Annotated[StrictInt, Field(ge=0, le=C.GRAPH_MAX_HOPS), BeforeValidator(_integral)]
RecentN: TypeAlias = Annotated[
    StrictInt, Field(ge=1, le=C.LIST_RECENT_MAX_N), BeforeValidator(_integral)
]
TagsLimit: TypeAlias = Annotated[
    StrictInt, Field(ge=1, le=C.GET_TAGS_MAX_LIMIT), BeforeValidator(_integral)
]
TopK: TypeAlias = Annotated[
    StrictInt, Field(ge=1, le=C.RECALL_MAX_TOP_K), BeforeValidator(_integral)
]
PassLimit: TypeAlias = Annotated[
    StrictInt, Field(ge=1, le=C.STALENESS_PASS_MAX_LIMIT), BeforeValidator(_integral)
]


class Args(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        defer_build=True,
    )


class NoArgs(Args):
    pass


class IdArgs(Args):
    id: Id


class GetEntryArgs(IdArgs):
    as_of: AsOf = None


class CaptureArgs(Args):
    content: Text
    tags: TagList = []
    source: OptionalSource = None
    volatility: Optional[Volatility] = None  # None: inferred from the content (volatility.py)
    kind: Optional[Kind] = None  # None: DEFAULT_KIND, entry counted as unclassified
    status: Status = C.DEFAULT_STATUS
    importance: Score01 = C.DEFAULT_IMPORTANCE
    claim_tag: Optional[ClaimTag] = None
    evidence_ref: OptionalEvidence = None


class AppendArgs(Args):
    id: Id
    addition: Text
    tags: TagList = []  # added to the entry's tags
    importance: Optional[Score01] = None
    claim_tag: Optional[ClaimTag] = None
    evidence_ref: OptionalEvidence = None
    source: OptionalSource = None


class UpdateArgs(Args):
    id: Id
    content: Text


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
    n: RecentN = C.LIST_RECENT_DEFAULT_N
    tag: Optional[TagFilter] = None
    as_of: AsOf = None


class TagsArgs(Args):
    limit: TagsLimit = C.GET_TAGS_DEFAULT_LIMIT


class GraphViewArgs(Args):
    seed_ids: Annotated[list[Id], Field(min_length=1, max_length=50)]
    hops: Hops = C.GRAPH_VIEW_DEFAULT_HOPS


class RecallArgs(Args):
    query: Annotated[
        StrictStr,
        Field(
            max_length=C.MAX_QUERY_CHARS,
            json_schema_extra={"pattern": C.TEXT_PATTERN, "description": "not blank, no NUL"},
        ),
    ]
    top_k: TopK = C.RECALL_DEFAULT_TOP_K
    tag: Optional[TagFilter] = None
    kind: Optional[Kind] = None
    hops: Hops = C.RECALL_DEFAULT_HOPS
    full: StrictBool = False
    as_of: AsOf = None


class NoteRecalledArgs(Args):
    """Internal (not routed): the entries a recall returned, whose recall_count goes up."""

    ids: Annotated[list[Id], Field(max_length=C.RECALL_MAX_TOP_K)]


class StalenessPassArgs(Args):
    limit: PassLimit = C.STALENESS_PASS_DEFAULT_LIMIT
