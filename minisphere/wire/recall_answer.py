"""Recall's answer, defined once (see `answers`): the ranked items, each with how every arm and
the rerank scored it, the entries due for revalidation, and how the query was read."""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired, Optional

from pydantic import Field, with_config
from typing_extensions import TypedDict

from minisphere.wire.answers import ANSWER_CONFIG, Entry


@with_config(ANSWER_CONFIG)
class ArmDetail(TypedDict):
    rank: int
    score: float
    rrf: Annotated[
        float, Field(description="this arm's share of the fused score: weight / (60 + rank)")
    ]


@with_config(ANSWER_CONFIG)
class KeywordDetail(ArmDetail):
    bm25: float
    proximity: float
    feedback: float


@with_config(ANSWER_CONFIG)
class GraphDetail(ArmDetail):
    hop: int
    via: Optional[str]


@with_config(ANSWER_CONFIG)
class RecencyDetail(ArmDetail):
    createdAt: int


@with_config(ANSWER_CONFIG)
class TagDetail(ArmDetail):
    tag: Annotated[
        str, Field(description="the entry's tag holding the most of the query's keyword matches")
    ]
    weight: Annotated[
        float,
        Field(
            description=(
                "that tag's matches, each keyword score / best, summed; score = weight / the heaviest "
                "tag's"
            )
        ),
    ]


@with_config(ANSWER_CONFIG)
class VectorDetail(ArmDetail):
    cosine: float


@with_config(ANSWER_CONFIG)
class RerankFactors(TypedDict):
    decay: float
    recall: float
    importance: float
    tagOverlap: float
    rolledUp: float
    tagShare: float
    subject: Annotated[
        float,
        Field(
            description=(
                "x3 when the entry starts with a query word too common to search (the speaker a "
                "question names), else 1"
            )
        ),
    ]
    name: Annotated[
        float,
        Field(
            description=(
                "x0.8 when the query searches for names (capitalised words past its first) and "
                "the entry holds none of them, else 1"
            )
        ),
    ]
    brevity: Annotated[
        float,
        Field(
            description=(
                "1 - lexical share of the fused score x (1 - min(1, characters / 200) ^ 0.5): a short "
                "episode's word match counts for less (a greeting shares a question's words, not what "
                "it asks); 1 for a semantic entry (a fact is short by design), from 200 characters "
                "on, and when the query has no searchable words"
            )
        ),
    ]
    superseded: Annotated[
        float,
        Field(
            description=(
                "x0.5 when a live entry replaces this one (a `supersedes` edge), lower still when "
                "needed to rank it just below that entry; else 1"
            )
        ),
    ]
    product: float


@with_config(ANSWER_CONFIG)
class MmrDetail(TypedDict):
    relevance: float
    maxSimilarity: float
    mmr: float


@with_config(ANSWER_CONFIG)
class Breakdown(TypedDict):
    keyword: Optional[KeywordDetail]
    graph: Optional[GraphDetail]
    recency: Optional[RecencyDetail]
    tag: Annotated[
        Optional[TagDetail],
        Field(
            description=("entries under the tag holding the most of the query's keyword matches")
        ),
    ]
    vector: NotRequired[
        Annotated[Optional[VectorDetail], Field(None, description="only with a vector binding")]
    ]
    fused: float
    rerank: RerankFactors
    final: float
    mmr: MmrDetail


@with_config(ANSWER_CONFIG)
class RecallItem(Entry):
    score: float
    supersededBy: Annotated[
        Optional[str],
        Field(
            description=(
                "the newest live entry replacing this one through `supersedes` edges; null when "
                "nothing live replaces it"
            )
        ),
    ]
    breakdown: Breakdown
    contentChars: Annotated[int, Field(description="length of the whole content")]
    truncated: Annotated[bool, Field(description="content was cut by the snippet budget")]


@with_config(ANSWER_CONFIG)
class Revalidate(TypedDict):
    id: str
    staleSince: Optional[int]
    question: str


@with_config(ANSWER_CONFIG)
class QueryFilters(TypedDict):
    kind: Optional[str]
    tag: Optional[str]


@with_config(ANSWER_CONFIG)
class VectorArmState(TypedDict):
    arm: Literal["on", "off"]
    provider: str
    reason: NotRequired[Annotated[Optional[str], Field(None)]]


@with_config(ANSWER_CONFIG)
class FusionState(TypedDict):
    lexicalShare: Annotated[
        float,
        Field(
            description=("the lexical arm's share of the fused score, 0..1 (1: lexical order kept)")
        ),
    ]
    lexicalMargin: Annotated[
        float,
        Field(
            description=("1 - 10th lexical score / 1st: how sharply the lexical head stands out")
        ),
    ]
    support: Annotated[
        float,
        Field(description=("how far the lexical arm backs the vector arm's 20 best hits, 0..1")),
    ]
    denseMargin: Annotated[
        float, Field(description=("1 - 20th cosine / best: how sharply the dense head stands out"))
    ]
    subjectLed: Annotated[
        bool,
        Field(
            description=(
                "the query names a word too common to search (a speaker): the lexical order was kept "
                "for it"
            )
        ),
    ]
    lexicalLed: Annotated[
        bool, Field(description=("the page kept the lexical order; the cosine only re-sorted it"))
    ]


@with_config(ANSWER_CONFIG)
class QueryUsed(TypedDict):
    original: str
    text: str
    terms: list[str]
    droppedTerms: list[str]
    standIns: NotRequired[
        Annotated[
            dict[str, list[str]],
            Field(
                default_factory=dict,
                description=(
                    "query words no entry contains -> the terms of this workspace searched beside them "
                    "(a compound's parts, a near spelling)"
                ),
            ),
        ]
    ]
    timePhrases: list[str]
    since: Optional[int]
    until: Optional[int]
    sinceIso: Optional[str]
    untilIso: Optional[str]
    boundsRelaxed: bool
    filters: QueryFilters
    arms: Annotated[dict[str, int], Field(description="hits per arm")]
    vector: NotRequired[
        Annotated[Optional[VectorArmState], Field(None, description="only with a vector binding")]
    ]
    fusion: NotRequired[
        Annotated[Optional[FusionState], Field(None, description="only where the vector arm ran")]
    ]
    asOf: NotRequired[
        Annotated[
            Optional[str],
            Field(
                None,
                description=(
                    "only for a recall as of a moment: that moment (UTC, milliseconds), the "
                    "workspace as it held then being what was searched"
                ),
            ),
        ]
    ]


@with_config(ANSWER_CONFIG)
class RecallAnswer(TypedDict):
    items: list[RecallItem]
    revalidate: list[Revalidate]
    queryUsed: QueryUsed
    timings: Annotated[dict[str, float], Field(description="milliseconds per pipeline stage")]
