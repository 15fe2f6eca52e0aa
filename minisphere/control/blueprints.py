"""Workspace blueprints: the bindings a workspace is born with.

`scheduledTasks {cron, limit}` drives the external staleness scheduler; `vector` is either
`null` (keyword + graph only, the default) or a description of an embedding binding.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, field_validator

from minisphere.errors import InvalidArgument

_CRON_FIELD = re.compile(r"^[0-9*/,\-]+$")
FALLBACK_BLUEPRINT = {"name": "default", "version": 1,
                      "bindings": {"scheduledTasks": {"cron": "17 3 * * *", "limit": 1000},
                                   "vector": None}}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScheduledTasks(_Strict):
    cron: StrictStr = "17 3 * * *"
    limit: Annotated[StrictInt, Field(ge=1, le=100_000)] = 1000

    @field_validator("cron")
    @classmethod
    def five_fields(cls, value: str) -> str:
        fields = value.split()
        if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
            raise ValueError("cron must have 5 fields of digits, '*', '/', ',' or '-'")
        return " ".join(fields)


class VectorBindingSpec(_Strict):
    """An embedding binding. `minilm` runs all-MiniLM-L6-v2 locally (384 dimensions); `http`
    calls an OpenAI-compatible /embeddings endpoint (`url`, `model`, `dimensions`, the key read
    from the environment variable named by `apiKeyEnv`); `hash` is deterministic, for tests."""
    provider: Literal["minilm", "http", "hash"] = "minilm"
    model: Annotated[StrictStr, Field(min_length=1, max_length=200)] = "all-MiniLM-L6-v2"
    dimensions: Annotated[StrictInt, Field(ge=1, le=8192)] = 384
    metric: Literal["cosine"] = "cosine"
    url: Optional[Annotated[StrictStr, Field(max_length=2000)]] = None
    apiKeyEnv: Optional[Annotated[StrictStr, Field(max_length=200)]] = None

    def embedder_spec(self) -> dict:
        """The spec `minisphere.engine.embedding.make_provider` (and the shared embedder) takes."""
        spec = {"provider": self.provider, "model": self.model, "dim": self.dimensions}
        if self.provider == "http":
            spec.update({"url": self.url, **({"apiKeyEnv": self.apiKeyEnv} if self.apiKeyEnv else {})})
        return spec


class Bindings(_Strict):
    scheduledTasks: Optional[ScheduledTasks] = ScheduledTasks()
    vector: Optional[VectorBindingSpec] = None


class Blueprint(_Strict):
    name: Annotated[StrictStr, Field(min_length=1, max_length=100)] = "default"
    version: Annotated[StrictInt, Field(ge=1)] = 1
    bindings: Bindings = Bindings()


def parse_blueprint(data) -> Blueprint:
    try:
        return Blueprint.model_validate(data)
    except Exception as exc:  # pydantic.ValidationError or a type error
        raise InvalidArgument(f"blueprint: {exc}".replace("\n", " ")[:600]) from None


def load_default_blueprint(path: str | Path | None) -> Blueprint:
    """The deployment's default blueprint file, or the built-in one when it is absent."""
    if path and Path(path).is_file():
        return parse_blueprint(json.loads(Path(path).read_text(encoding="utf-8")))
    return parse_blueprint(FALLBACK_BLUEPRINT)
