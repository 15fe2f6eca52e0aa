"""The shape of recall's answer: the ranked items, each with how every arm and the rerank scored
it, the entries due for revalidation, and how the query was read."""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from minisphere.http.answer_model import Answer
from minisphere.http.workspace_responses import Entry


class ArmDetail(Answer):
    rank: int
    score: float
    rrf: float = Field(description="this arm's share of the fused score: weight / (60 + rank)")


class KeywordDetail(ArmDetail):
    bm25: float
    proximity: float
    feedback: float


class GraphDetail(ArmDetail):
    hop: int
    via: Optional[str]


class RecencyDetail(ArmDetail):
    createdAt: int


class VectorDetail(ArmDetail):
    cosine: float


class RerankFactors(Answer):
    decay: float
    recall: float
    importance: float
    tagOverlap: float
    rolledUp: float
    tagShare: float
    subject: float = Field(description="x3 when the entry starts with a query word too common "
                                       "to search (the speaker a question names), else 1")
    brevity: float = Field(description="1 - lexical share of the fused score x (1 - min(1, "
                                       "characters / 200) ^ 0.5): a short entry's word match "
                                       "counts for less (a greeting shares a question's words, "
                                       "not what it asks); 1 from 200 characters on, and when "
                                       "the query has no searchable words")
    product: float


class MmrDetail(Answer):
    relevance: float
    maxSimilarity: float
    mmr: float


class Breakdown(Answer):
    keyword: Optional[KeywordDetail]
    graph: Optional[GraphDetail]
    recency: Optional[RecencyDetail]
    vector: Optional[VectorDetail] = Field(None, description="only with a vector binding")
    fused: float
    rerank: RerankFactors
    final: float
    mmr: MmrDetail


class RecallItem(Entry):
    score: float
    breakdown: Breakdown
    contentChars: int = Field(description="length of the whole content")
    truncated: bool = Field(description="content was cut by the snippet budget")


class Revalidate(Answer):
    id: str
    staleSince: Optional[int]
    question: str


class QueryFilters(Answer):
    kind: Optional[str]
    tag: Optional[str]


class VectorArmState(Answer):
    arm: Literal["on", "off"]
    provider: str
    reason: Optional[str] = None


class FusionState(Answer):
    lexicalShare: float = Field(description="the lexical arm's share of the fused score, 0..1 (1: lexical order kept)")
    lexicalMargin: float = Field(description="1 - 10th lexical score / 1st: how sharply the lexical head stands out")
    support: float = Field(description="how far the lexical arm backs the vector arm's 20 best hits, 0..1")
    denseMargin: float = Field(description="1 - 20th cosine / best: how sharply the dense head stands out")
    subjectLed: bool = Field(description="the query names a word too common to search (a speaker): "
                                         "the lexical order was kept for it")
    lexicalLed: bool = Field(description="the page kept the lexical order; the cosine only re-sorted it")


class QueryUsed(Answer):
    original: str
    text: str
    terms: list[str]
    droppedTerms: list[str]
    standIns: dict[str, list[str]] = Field(
        default_factory=dict, description="query words no entry contains -> the terms of this "
                                          "workspace searched beside them (a compound's parts, "
                                          "a near spelling)")
    timePhrases: list[str]
    since: Optional[int]
    until: Optional[int]
    sinceIso: Optional[str]
    untilIso: Optional[str]
    boundsRelaxed: bool
    filters: QueryFilters
    arms: dict[str, int] = Field(description="hits per arm")
    vector: Optional[VectorArmState] = Field(None, description="only with a vector binding")
    fusion: Optional[FusionState] = Field(None, description="only where the vector arm ran")


class RecallAnswer(Answer):
    items: list[RecallItem]
    revalidate: list[Revalidate]
    queryUsed: QueryUsed
    timings: dict[str, float] = Field(description="milliseconds per pipeline stage")
