"""Recycled processes never mix tenants, checked as a walk: a few workspaces captured into,
read, hibernated and woken again in random order over the real service, so that each process
is handed from workspace to workspace through the spare pool. Every answer is checked against a
per-workspace model of what was acknowledged: a count, the texts listed and the texts recalled
must be the workspace's own, whichever process served it."""

from __future__ import annotations

import ray
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from tests.e2e.helpers import directory_of

WORKSPACES = 3
STEPS = 25
WALKS = 6


def recycled_wakes(service) -> int:
    return ray.get(directory_of(service).residency_status.remote(), timeout=60)["wakes"]["recycled"]


def make_walk(http, admin_headers, new_workspace):
    class RecyclingWalk(RuleBasedStateMachine):
        @initialize()
        def workspaces(self):
            self.spaces = [new_workspace() for _ in range(WORKSPACES)]
            self.model: dict[str, list[str]] = {ws: [] for ws, _ in self.spaces}
            self.serial = 0

        @rule(which=st.integers(0, WORKSPACES - 1))
        def capture(self, which):
            ws, headers = self.spaces[which]
            self.serial += 1
            text = f"canary {ws} note {self.serial}"
            answer = http.post(f"/v1/w/{ws}/capture", json={"content": text}, headers=headers)
            assert answer.status_code == 200, answer.text
            self.model[ws].append(text)

        @rule(which=st.integers(0, WORKSPACES - 1))
        def hibernate(self, which):
            ws, _ = self.spaces[which]
            answer = http.post(f"/v1/workspaces/{ws}/hibernate", headers=admin_headers)
            assert answer.status_code == 200, answer.text

        @rule(which=st.integers(0, WORKSPACES - 1))
        def list_recent(self, which):
            ws, headers = self.spaces[which]
            answer = http.post(f"/v1/w/{ws}/listRecent", json={"n": 200}, headers=headers)
            assert answer.status_code == 200, answer.text
            listed = sorted(entry["content"] for entry in answer.json()["items"])
            assert listed == sorted(self.model[ws])

        @rule(which=st.integers(0, WORKSPACES - 1))
        def recall_every_canary(self, which):
            """A query naming every workspace's canary word finds only this one's texts."""
            ws, headers = self.spaces[which]
            answer = http.post(
                f"/v1/w/{ws}/recall", json={"query": "canary note", "topK": 50}, headers=headers
            )
            assert answer.status_code == 200, answer.text
            found = {hit["content"] for hit in answer.json()["items"]}
            assert found <= set(self.model[ws]), found - set(self.model[ws])

        @invariant()
        def counts_are_each_workspaces_own(self):
            for ws, headers in getattr(self, "spaces", []):
                answer = http.post(f"/v1/w/{ws}/getCount", json={}, headers=headers)
                assert answer.status_code == 200, answer.text
                assert answer.json() == {"count": len(self.model[ws])}

    return RecyclingWalk


def test_workspaces_woken_again_over_recycled_processes_answer_only_their_own(
    http, admin_headers, new_workspace, service
):
    recycled_before = recycled_wakes(service)
    walk = make_walk(http, admin_headers, new_workspace)
    walk.TestCase.settings = settings(
        max_examples=WALKS,
        stateful_step_count=STEPS,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    walk.TestCase().runTest()
    # the walk is only worth its name if processes were in fact handed between workspaces
    assert recycled_wakes(service) > recycled_before
