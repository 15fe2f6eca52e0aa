"""The base of the answer models of the errors and of the service's and the operator's routes
(a workspace call's answers are `minisphere.wire`'s TypedDicts, under the same rules).

The answer models exist for the published OpenAPI document (`/openapi.json` describes answers
as well as requests) and for the test that validates real answers of every route against it;
the routes return the control plane's own JSON, so nothing is converted at request time. Models
forbid unknown fields: a field added without describing it here fails that test.
"""

from __future__ import annotations

from pydantic import BaseModel

from minisphere.wire.answers import ANSWER_CONFIG


class Answer(BaseModel):
    model_config = ANSWER_CONFIG
