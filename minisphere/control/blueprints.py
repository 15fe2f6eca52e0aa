"""Workspace blueprints: the bindings a workspace is born with.

`scheduledTasks {cron, limit}` drives the external staleness scheduler; `vector` is either
`null` (keyword + graph only, the default) or a description of an embedding binding.

A new blueprint's cron is checked with the scheduler's own parser (`minisphere.cron`, cron's
meaning on APScheduler, in UTC) and must fire at least once: a cron the scheduler would refuse
is refused here, when the workspace is created, not later by the scheduler.
`parse_stored_blueprint` reads a blueprint already kept in the control plane (possibly written
by a build that checked less): it never refuses one for its cron, so a workspace can always be
opened; the scheduler skips and audits a schedule it cannot use.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from apscheduler.triggers.cron import CronTrigger
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from minisphere.cron import cron_trigger
from minisphere.errors import InvalidArgument
from minisphere.wire import LOCAL_PROVIDERS

_CRON_FIELD = re.compile(r"^[0-9*/,\-]+$")
_CRON_MAX_CHARS = 200
# validation context of a blueprint read back from the control plane
_STORED = "stored"
LOCAL_MODEL = "all-MiniLM-L6-v2"
LOCAL_MODEL_DIMENSIONS = 384
FALLBACK_BLUEPRINT = {
    "name": "default",
    "version": 1,
    "bindings": {"scheduledTasks": {"cron": "17 3 * * *", "limit": 1000}, "vector": None},
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScheduledTasks(_Strict):
    cron: StrictStr = "17 3 * * *"
    limit: Annotated[StrictInt, Field(ge=1, le=100_000)] = 1000

    @field_validator("cron")
    @classmethod
    def five_fields(cls, value: str, info: ValidationInfo) -> str:
        fields = value.split()
        if (
            len(value) > _CRON_MAX_CHARS
            or len(fields) != 5
            or not all(_CRON_FIELD.match(f) for f in fields)
        ):
            raise ValueError("cron must have 5 fields of digits, '*', '/', ',' or '-'")
        cron = " ".join(fields)
        if not (info.context or {}).get(_STORED):
            check_cron(cron)
        return cron


def check_cron(cron: str) -> CronTrigger:
    """The trigger the scheduler will build from `cron`, or ValueError saying why it cannot
    (a value out of range, a zero step, a date that never comes)."""
    try:
        trigger = cron_trigger(cron)
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"cron {cron!r} is not valid: {exc}") from None
    if trigger.get_next_fire_time(None, datetime.now(UTC)) is None:
        raise ValueError(f"cron {cron!r} never fires")
    return trigger


class VectorBindingSpec(_Strict):
    """An embedding binding. `minilm-int8` (the default) runs all-MiniLM-L6-v2 locally with
    int8 weights (384 dimensions): judged leave-one-conversation-out it recalls as well as the
    float model and embeds a query in half the time. `minilm` is the float model (its own
    vectors: a workspace moves between the two only by re-embedding); `http` calls an
    OpenAI-compatible /embeddings endpoint (`url`, `model`, `dimensions`, the key read from the
    environment variable named by `apiKeyEnv`); `hash` is deterministic, for tests. A stored
    blueprint names its provider, so changing this default never rebinds a workspace."""

    provider: Literal["minilm", "minilm-int8", "http", "hash"] = "minilm-int8"
    model: Annotated[StrictStr, Field(min_length=1, max_length=200)] = LOCAL_MODEL
    dimensions: Annotated[StrictInt, Field(ge=1, le=8192)] = LOCAL_MODEL_DIMENSIONS
    metric: Literal["cosine"] = "cosine"
    url: Optional[Annotated[StrictStr, Field(max_length=2000)]] = None
    apiKeyEnv: Optional[Annotated[StrictStr, Field(max_length=200)]] = None

    @model_validator(mode="after")
    def _a_binding_that_can_run(self, info: ValidationInfo) -> VectorBindingSpec:
        """The local models are one model of one size, and an endpoint needs its address:
        a binding that could never embed is refused when it is asked for (a stored one is
        read as it was written)."""
        if (info.context or {}).get(_STORED):
            return self
        if self.provider in LOCAL_PROVIDERS and (self.model, self.dimensions) != (
            LOCAL_MODEL,
            LOCAL_MODEL_DIMENSIONS,
        ):
            raise ValueError(
                f"the {self.provider} provider is {LOCAL_MODEL} with "
                f"{LOCAL_MODEL_DIMENSIONS} dimensions"
            )
        if self.provider == "http" and not (self.url or "").startswith(("http://", "https://")):
            raise ValueError("the http provider needs the url of its /embeddings endpoint")
        return self

    def embedder_spec(self) -> dict[str, Any]:
        """The spec `minisphere.engine.embedding.make_provider` (and the shared embedder) takes."""
        spec: dict[str, Any] = {
            "provider": self.provider,
            "model": self.model,
            "dim": self.dimensions,
        }
        if self.provider == "http":
            spec.update(
                {"url": self.url, **({"apiKeyEnv": self.apiKeyEnv} if self.apiKeyEnv else {})}
            )
        return spec


class Bindings(_Strict):
    scheduledTasks: Optional[ScheduledTasks] = ScheduledTasks()
    vector: Optional[VectorBindingSpec] = None


class Blueprint(_Strict):
    name: Annotated[StrictStr, Field(min_length=1, max_length=100)] = "default"
    version: Annotated[StrictInt, Field(ge=1)] = 1
    bindings: Bindings = Bindings()


def parse_blueprint(data: object) -> Blueprint:
    """A new blueprint (from a create request or the deployment's default file), fully checked;
    InvalidArgument says what is wrong."""
    try:
        return Blueprint.model_validate(data)
    except (ValidationError, TypeError) as exc:
        raise InvalidArgument(f"blueprint: {exc}".replace("\n", " ")[:600]) from None


def parse_stored_blueprint(data: object) -> Blueprint:
    """A blueprint kept in the control plane. Its cron is not re-checked with the scheduler's
    parser (the scheduler skips and audits one it cannot use), so a workspace whose stored
    schedule is unusable can still be opened and its other bindings read."""
    try:
        return Blueprint.model_validate(data, context={_STORED: True})
    except (ValidationError, TypeError) as exc:
        raise InvalidArgument(f"blueprint: {exc}".replace("\n", " ")[:600]) from None


def load_default_blueprint(path: str | Path | None) -> Blueprint:
    """The deployment's default blueprint file, or the built-in one when it is absent."""
    if path and Path(path).is_file():
        return parse_blueprint(json.loads(Path(path).read_text(encoding="utf-8")))
    return parse_blueprint(FALLBACK_BLUEPRINT)
