"""Pydantic models of the service's answers (camelCase on the wire, snake_case in Python).

Models allow extra fields, so a newer server adding a field never breaks an older client.
"""
from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


class Entry(Model):
    id: str
    content: str
    source: Optional[str] = None
    created_at: int
    updated_at: int
    recall_count: int = 0
    importance: float = 0.0
    claim_tag: Optional[str] = None
    evidence_ref: Optional[str] = None
    status: str
    kind: str
    volatility: str
    tags: list[str] = []


class CaptureResult(Model):
    outcome: Literal["stored", "blocked", "merged", "replaced"]
    id: Optional[str] = None
    match_id: Optional[str] = None


class RecallItem(Model):
    id: str
    content: str
    score: float
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
    resident: Optional[bool] = None          # shown by get_workspace (an actor holds it now)


class CreatedWorkspace(Model):
    workspace: WorkspaceInfo
    token: str
    token_id: Optional[str] = None
