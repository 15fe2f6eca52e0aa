"""The base of every answer model (the workspace calls', the errors, the service's and the
operator's routes).

The answer models exist for the published OpenAPI document (`/openapi.json` describes answers
as well as requests) and for the test that validates real answers of every route against it;
the routes return the engine's own JSON, so nothing is converted at request time. Models forbid
unknown fields: a field the engine adds without describing it here fails that test.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")
