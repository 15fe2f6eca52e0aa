"""Pydantic models of the service's answers (camelCase on the wire, snake_case in Python).

Models allow extra fields, so a newer server adding a field never breaks an older client. An
entry's fields and the enum values are `minisphere.wire`'s, the ones the service answers with.
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from minisphere import wire


class Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


class Supersession(Model):
    """What replaced an entry (`supersedes` edges): its newest live replacement, the way to it,
    and what the entry replaces itself."""

    superseded_by: Optional[str] = None
    chain: list[str] = []
    supersedes: list[str] = []


class Entry(Model, wire.Entry):
    """An entry as a read or a write answers it; what an answer adds to the wire entry (the
    staleness fields, a list's `truncated`) is kept as extra fields. `supersession` comes with
    getEntry and with the writes that answer the entry they changed."""

    supersession: Optional[Supersession] = None


class CaptureResult(Model):
    outcome: wire.CaptureOutcome
    id: Optional[str] = None
    match_id: Optional[str] = None
    # with a vector binding: the earlier entry this capture may replace (contract section 7.1)
    supersession_hint: Optional[dict[str, Any]] = None


class RecallItem(Model):
    id: str
    content: str
    score: float
    superseded_by: Optional[str] = None  # the newest live entry replacing this one
    breakdown: dict[str, Any] = {}


class RecallResult(Model):
    items: list[RecallItem]
    query_used: Any = None


class WorkspaceInfo(Model):
    id: str
    created_at: int
    updated_at: int
    state: str
    contracts: list[dict[str, Any]] = []
    blueprint: dict[str, Any] = {}
    label: Optional[str] = None
    node_id: Optional[str] = None
    last_active_at: Optional[int] = None
    resident: Optional[bool] = None  # shown by get_workspace (an actor holds it now)


class CreatedWorkspace(Model):
    workspace: WorkspaceInfo
    token: str
    token_id: Optional[str] = None
