"""Schemathesis's stateful testing over the token routes and the workspace lifecycle, driven by
the OpenAPI links the service publishes (minisphere/http/links.py): a scenario creates a
workspace, issues, lists and revokes its tokens, calls its methods and deletes it, each step's
parameters taken from earlier answers (create -> token -> call -> revoke -> call).

The machine sends each call with the credential the scenario last named for its workspace
(the token a creation or an issue answered, or the token just revoked), admin routes with the
admin token, and checks every answer:

- no 5xx, and every 4xx is the JSON error `{"error": {"code", "message"}}`;
- the answer's status, media type and body are the ones the published document lists;
- a token that was revoked, or whose workspace was deleted, is refused (401; 429 once the
  caller's failed-authentication budget is spent): revocation holds from the very next call;
- a live token of the workspace is never refused as a credential (a read token's write is
  403 insufficient_scope, nothing else).

`walk_lifecycles(url, admin_token, scenarios)` runs it against a service and returns what the
checks saw; `assert_lifecycle_walked` says the walk went through the lifecycle. Every workspace
a scenario created is deleted when the scenario ends."""

from __future__ import annotations

import collections
import time
from dataclasses import dataclass, field
from typing import ClassVar

import httpx
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.support.stable_draws import without_local_constants

# the routes a lifecycle goes through: workspaces, their tokens, their methods
LIFECYCLE_PATHS = r"^/v1/(workspaces(/\{workspace_id\}(/tokens(/\{token_id\})?)?)?|w/.*)$"
REQUEST_TIMEOUT_S = 60
# a token within this margin of its expiry may be refused or not: neither is checked
EXPIRY_MARGIN_MS = 3_000
# steps per scenario: with 10, forty scenarios revoked no token through the links at all;
# with 15 they issue ~18 and revoke ~12 (the walk is the same on every run)
LIFECYCLE_STEPS = 15
WRITE_METHODS = {"capture", "append", "update", "setStatus", "forget", "link", "unlink"}


@dataclass
class Token:
    token_id: str
    secret: str
    scope: str
    expires_at: int | None
    revoked: bool = False

    def state(self, now_ms: int) -> str:
        """'refused', 'live', or 'unsure' (about to expire, or just expired)."""
        if self.revoked:
            return "refused"
        if self.expires_at is None or self.expires_at > now_ms + EXPIRY_MARGIN_MS:
            return "live"
        return "refused" if self.expires_at < now_ms - EXPIRY_MARGIN_MS else "unsure"


@dataclass
class Scenario:
    tokens: dict[str, dict[str, Token]] = field(default_factory=dict)  # workspace -> id -> token
    named: dict[str, Token] = field(default_factory=dict)  # workspace -> the last token named
    created: list[str] = field(default_factory=list)
    used: dict[str, Token | None] = field(default_factory=dict)  # case id -> credential sent

    def issued(self, workspace: str, answer: dict, scope: str) -> None:
        token = Token(answer["tokenId"], answer["token"], scope, answer.get("expiresAt"))
        self.tokens.setdefault(workspace, {})[token.token_id] = token
        self.named[workspace] = token

    def revoked(self, workspace: str, token_id: str) -> None:
        token = self.tokens.get(workspace, {}).get(token_id)
        if token is not None:
            token.revoked = True
            self.named[workspace] = token  # the next call tries the token just revoked

    def deleted(self, workspace: str) -> None:
        for token in self.tokens.get(workspace, {}).values():
            token.revoked = True  # a deleted workspace's tokens are gone with it


def error_body_problem(response) -> str | None:
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        error = None
    if not isinstance(error, dict) or set(error) != {"code", "message"}:
        return f"a {response.status_code} that is not the JSON error body: {response.text[:200]}"
    return None


def record_answer(scenario: Scenario, case, response) -> None:
    """What a creation, a token issue, a revocation or a deletion changes in the scenario."""
    path, verb, status = case.operation.path, case.method.upper(), response.status_code
    params = case.path_parameters
    if (verb, path) == ("POST", "/v1/workspaces") and status == 201:
        answer = response.json()
        workspace = answer["workspace"]["id"]
        scenario.created.append(workspace)
        scenario.tokens.pop(workspace, None)  # a new creation, new tokens
        scenario.issued(workspace, answer, "write")
    elif path.endswith("/tokens") and verb == "POST" and status == 201:
        answer = response.json()
        scenario.issued(params["workspace_id"], answer, answer["scope"])
    elif path.endswith("/{token_id}") and verb == "DELETE" and status == 200:
        scenario.revoked(params["workspace_id"], params["token_id"])
    elif path == "/v1/workspaces/{workspace_id}" and verb == "DELETE" and status == 200:
        scenario.deleted(params["workspace_id"])


def check_credential(
    exercised: collections.Counter, token: Token, case, response, where: str
) -> None:
    """A revoked or deleted workspace's token is refused; a live one never is (a read token's
    write is 403 insufficient_scope, nothing else). Counts what each kind of token answered."""
    status = response.status_code
    method = case.operation.path.rsplit("/", 1)[-1]
    state = token.state(int(time.time() * 1000))
    if state != "unsure":
        exercised[f"{state} token answered {status // 100}xx"] += 1
    if state == "refused":
        assert status in (401, 429), (
            f"{where}: a revoked or deleted workspace's token "
            f"({token.token_id}) was not refused: {response.text[:300]}"
        )
    elif state == "live":
        assert status not in (401, 429), f"{where}: a live token was refused: {response.text[:300]}"
        if status == 403:
            assert (
                token.scope == "read"
                and method in WRITE_METHODS
                and response.json()["error"]["code"] == "insufficient_scope"
            ), f"{where}: {token.scope} token: {response.text[:300]}"


def lifecycle_machine(schema, url: str, admin_token: str):
    admin = {"Authorization": f"Bearer {admin_token}"}
    base = schema.include(path_regex=LIFECYCLE_PATHS).as_state_machine()

    class Lifecycle(base):
        # what the checks saw, over every scenario: a test asserts the lifecycle was walked
        exercised: ClassVar[collections.Counter] = collections.Counter()

        def setup(self) -> None:
            self.scenario = Scenario()

        def credential(self, case) -> Token | None:
            workspace = case.path_parameters.get("workspace")
            if workspace is None:
                return None  # an admin route
            return self.scenario.named.get(workspace)

        def get_call_kwargs(self, case) -> dict:
            token = self.credential(case)
            self.scenario.used[case.id] = token
            headers = admin if token is None else {"Authorization": f"Bearer {token.secret}"}
            return {"base_url": url, "headers": headers, "timeout": REQUEST_TIMEOUT_S}

        def after_call(self, response, case) -> None:
            super().after_call(response, case)
            record_answer(self.scenario, case, response)

        def validate_response(self, response, case, additional_checks=None, **kwargs) -> None:
            status = response.status_code
            where = f"{case.method} {case.formatted_path} -> {status}"
            assert status < 500, f"{where}: {response.text[:300]}"
            if status >= 400:
                problem = error_body_problem(response)
                assert problem is None, f"{where}: {problem}"
            token = self.scenario.used.pop(case.id, None)
            if token is not None:
                check_credential(self.exercised, token, case, response, where)
            self.exercised[f"{case.method} {case.operation.path} {status}"] += 1
            case.validate_response(
                response,
                checks=[
                    not_a_server_error,
                    status_code_conformance,
                    content_type_conformance,
                    response_schema_conformance,
                ],
                transport_kwargs=kwargs or None,
            )

        def teardown(self) -> None:
            with httpx.Client(base_url=url, headers=admin, timeout=REQUEST_TIMEOUT_S) as client:
                for workspace in self.scenario.created:
                    client.delete(f"/v1/workspaces/{workspace}")

    return Lifecycle


def walk_lifecycles(url: str, admin_token: str, scenarios: int, steps: int = LIFECYCLE_STEPS):
    """Run the machine over the service at `url` (its live `/openapi.json`); returns what the
    checks saw (`Lifecycle.exercised`). Derandomized, and blind to the project's own constants:
    a failure replays with the same walk, in the suite or alone."""
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    machine = lifecycle_machine(schema, url, admin_token)
    with without_local_constants():
        machine.run(
            settings=settings(
                max_examples=scenarios,
                stateful_step_count=steps,
                deadline=None,
                database=None,
                derandomize=True,
                suppress_health_check=list(HealthCheck),
            )
        )
    return machine.exercised


def assert_lifecycle_walked(exercised) -> None:
    """The walk went through the lifecycle, not only around it: workspaces were created and
    tokens issued and revoked through the links, a live token was accepted and a revoked one
    refused."""
    assert exercised["POST /v1/workspaces 201"] > 0, exercised
    assert exercised["POST /v1/workspaces/{workspace_id}/tokens 201"] > 0, exercised
    assert exercised["DELETE /v1/workspaces/{workspace_id}/tokens/{token_id} 200"] > 0, exercised
    assert exercised["live token answered 2xx"] > 0, exercised
    assert exercised["refused token answered 4xx"] > 0, exercised
