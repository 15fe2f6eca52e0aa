"""Schemathesis's stateful testing (OpenAPI links) against the running service on Ray: the
token routes and the workspace lifecycle (create -> token -> call -> revoke -> call), each
step's parameters taken from earlier answers through the links the service publishes. No
answer is a 5xx, every answer is what the published document lists, a revoked token (or a
deleted workspace's) is refused from the very next call and a live one never is
(tests/support/stateful_lifecycle.py). The walk is derandomized, so a failure replays."""

from __future__ import annotations

from tests.support.stateful_lifecycle import assert_lifecycle_walked, walk_lifecycles

# fewer than the in-process walk (tests/http/test_stateful_lifecycle.py), which gives the breadth:
# this one proves the same lifecycle through Serve and the workspace actors
SCENARIOS = 20


def test_linked_lifecycles_on_the_service_answer_no_5xx_and_revocation_holds(
    service, http, admin_headers
):
    before = {w["id"] for w in http.get("/v1/workspaces", headers=admin_headers).json()["items"]}
    exercised = walk_lifecycles(service["url"], service["admin"], SCENARIOS)
    print(
        f"\nstateful schemathesis: {sum(exercised.values())} checks: "
        f"{dict(sorted(exercised.items()))}"
    )
    assert_lifecycle_walked(exercised)
    after = {w["id"] for w in http.get("/v1/workspaces", headers=admin_headers).json()["items"]}
    assert after <= before, "a scenario left a workspace behind"
