"""What recall needs of the optional vector binding's arm, declared here so the pipeline does
not import the binding (`engine/vectors/arm.py` implements both protocols): an arm whose query
vector may still be on its way resolves to one that answers KNN hits, exact cosines of listed
entries, and the feedback round's refined hits."""

from __future__ import annotations

from typing import Protocol, TypeAlias

from minisphere.engine.db import Connection
from minisphere.engine.retrieval.arms import Hit
from minisphere.engine.retrieval.sql_filters import Prefilter


class VectorArm(Protocol):
    def resolve(self) -> VectorArm | None: ...

    def hits(self, conn: Connection, prefilter: Prefilter) -> list[Hit]: ...

    def cosines(self, conn: Connection, entry_ids: list[str]) -> dict[str, float]: ...

    def refine(self, conn: Connection, prefilter: Prefilter, head_ids: list[str]) -> list[Hit]: ...


class PendingVectorArm(Protocol):
    """An arm whose query is still being embedded: None once resolved when embedding failed."""

    def resolve(self) -> VectorArm | None: ...


AnyVectorArm: TypeAlias = VectorArm | PendingVectorArm | None
