"""Refusals arrive as the client's `ServiceError` with the service's status and code (sync and
async), and a refused call writes nothing."""

from __future__ import annotations

import pytest

from minisphere.client import ServiceError
from tests.client.helpers import got, new_workspace

MISSING = "123e4567-e89b-42d3-a456-426614174000"


async def refused(call) -> ServiceError:
    """The ServiceError `call()` raises (the sync client raises it, the async one's
    coroutine does)."""
    with pytest.raises(ServiceError) as caught:
        await got(call())
    error = caught.value
    assert error.message and str(error).startswith(f"{error.status} {error.code}: ")
    return error


# (case, call made with (admin client, the seeded workspace's facts), status, code)
CASES = [
    (
        "unknown-token",
        lambda admin, s: admin.workspace("seeded", "msw_nobody").get_count(),
        401,
        "unauthenticated",
    ),
    (
        "no-token-at-all",
        lambda admin, s: admin.workspace("seeded", " ").get_count(),
        401,
        "unauthenticated",
    ),
    (
        "token-of-another-workspace",
        lambda admin, s: admin.workspace("seeded", s["other_token"]).capture("x"),
        403,
        "forbidden",
    ),
    (
        "read-token-writes",
        lambda admin, s: admin.workspace("seeded", s["read_token"]).capture(
            "a write with a read token"
        ),
        403,
        "insufficient_scope",
    ),
    (
        "tenant-runs-maintenance",
        lambda admin, s: admin.workspace("seeded", s["token"]).run_staleness_pass(),
        403,
        "forbidden",
    ),
    ("missing-entry", lambda admin, s: s["ws"].get_entry(MISSING), 404, "not_found"),
    ("unknown-method", lambda admin, s: s["ws"].call("dropTables"), 404, "not_found"),
    (
        "missing-workspace-for-admin",
        lambda admin, s: admin.workspace("nowhere").get_count(),
        404,
        "not_found",
    ),
    (
        "delete-missing-workspace",
        lambda admin, s: admin.delete_workspace("nowhere"),
        404,
        "not_found",
    ),
    (
        "malformed-workspace-id",
        lambda admin, s: admin.workspace("Bad_Id").get_count(),
        400,
        "malformed_request",
    ),
    (
        "idempotency-key-with-a-space",
        lambda admin, s: s["ws"].capture("keyed", idempotency_key="two words"),
        400,
        "malformed_request",
    ),
    (
        "idempotency-key-too-long",
        lambda admin, s: s["ws"].capture("keyed", idempotency_key="k" * 201),
        400,
        "malformed_request",
    ),
    (
        "workspace-exists",
        lambda admin, s: admin.create_workspace("seeded"),
        409,
        "workspace_exists",
    ),
    (
        "kind-gate",
        lambda admin, s: s["ws"].link(s["semantic"], s["semantic2"], "follows"),
        409,
        "kind_gate_violation",
    ),
    (
        "idempotency-key-reused-for-another-body",
        lambda admin, s: s["ws"].capture("another body", idempotency_key=s["used_key"]),
        409,
        "idempotency_key_reused",
    ),
    (
        "invalid-argument",
        lambda admin, s: s["ws"].capture("x", kind="event"),
        422,
        "invalid_argument",
    ),
    (
        "self-link",
        lambda admin, s: s["ws"].link(s["semantic"], s["semantic"], "relates_to"),
        422,
        "self_link",
    ),
    ("content-too-large", lambda admin, s: s["ws"].capture("x" * 70_000), 413, "content_too_large"),
]


@pytest.mark.parametrize("call, status, code", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refusals_are_service_errors_with_status_and_code_and_write_nothing(
    run, call, status, code
):
    async def scenario(admin):
        ws, token = await new_workspace(admin, "seeded")
        _, other_token = await new_workspace(admin, "other")
        read = await got(admin.create_token("seeded", "read"))
        seeded = {
            "ws": ws,
            "token": token,
            "other_token": other_token,
            "read_token": read["token"],
            "used_key": "key-1",
            "semantic": (await got(ws.capture("first fact", kind="semantic"))).id,
            "semantic2": (await got(ws.capture("second fact", kind="semantic"))).id,
        }
        await got(ws.capture("a keyed write", idempotency_key="key-1"))
        before = [e.model_dump() for e in await got(ws.list_recent(n=50))]
        error = await refused(lambda: call(admin, seeded))
        assert (error.status, error.code) == (status, code)
        assert [e.model_dump() for e in await got(ws.list_recent(n=50))] == before

    run(scenario)
