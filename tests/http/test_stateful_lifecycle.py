"""Schemathesis's stateful testing (OpenAPI links) over the token routes and the workspace
lifecycle, against the real app over real HTTP (uvicorn) in front of real engine files and a
real control plane (tests/support/engine_gateway.py): no 5xx, every answer as published, a
revoked token refused from the very next call, a live one never. The same walk runs against
the service on Ray in tests/e2e/test_schemathesis_stateful.py."""

from __future__ import annotations

from tests.support.engine_gateway import ADMIN_TOKEN, EngineGateway, engine_api, serve
from tests.support.stateful_lifecycle import assert_lifecycle_walked, walk_lifecycles

SCENARIOS = 30


def test_linked_lifecycles_answer_no_5xx_and_revocation_holds_from_the_next_call(tmp_path):
    gateway = EngineGateway(tmp_path)
    try:
        with serve(engine_api(gateway)) as url:
            exercised = walk_lifecycles(url, ADMIN_TOKEN, SCENARIOS)
    finally:
        gateway.close()
    assert_lifecycle_walked(exercised)
