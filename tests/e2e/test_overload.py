"""The node past its capacity, on the real local cluster: every call is answered, a refused one
with 503 `overloaded` and a Retry-After (never left to time out), a refused call was not run,
and nothing acknowledged is lost once the refused calls are sent again after their pause."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time

import httpx
import ray

from minisphere.directory.residents import REFRESH_INTERVAL_S
from tests.e2e.helpers import directory_of, post_answered

CALL_TIMEOUT_S = 60
SETTLE_TIMEOUT_S = 60


def refusal_is_well_formed(response: httpx.Response) -> bool:
    return (
        response.status_code == 503
        and response.json()["error"]["code"] == "overloaded"
        and int(response.headers["retry-after"]) >= 1
    )


async def capture_until_answered(http, ws, headers, key: str, refusals: list) -> int:
    """One keyed capture, sent again after each refusal's pause: its final status."""
    response = await post_answered(
        http,
        f"/v1/w/{ws}/capture",
        refusals,
        headers={**headers, "Idempotency-Key": key},
        json={"content": f"note {key}"},
    )
    return response.status_code


def hibernated(service, http, admin_headers, spaces) -> None:
    for ws, _ in spaces:
        assert http.post(f"/v1/workspaces/{ws}/hibernate", headers=admin_headers).status_code == 200
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while (
        ray.get(directory_of(service).residency_status.remote(), timeout=30)["state"][
            "hibernations"
        ]
        and time.monotonic() < deadline
    ):
        time.sleep(0.05)


def test_wakes_past_the_deadline_are_refused_at_once_and_nothing_acknowledged_is_lost(
    http, admin_headers, new_workspace, service
):
    directory = directory_of(service)
    spaces = [new_workspace() for _ in range(24)]
    hibernated(service, http, admin_headers, spaces)
    # a deadline no queued wake can meet: any wake sent while another is under way is refused
    previous = ray.get(directory.set_residency.remote(wake_deadline_s=0.001), timeout=30)
    refusals: list[httpx.Response] = []

    async def everyone():
        async with httpx.AsyncClient(base_url=service["url"], timeout=CALL_TIMEOUT_S) as client:
            return await asyncio.gather(
                *(
                    capture_until_answered(client, ws, h, f"{ws}-first", refusals)
                    for ws, h in spaces
                )
            )

    try:
        statuses = asyncio.run(everyone())
    finally:
        ray.get(
            directory.set_residency.remote(wake_deadline_s=previous["wake_deadline_s"]), timeout=30
        )
    assert statuses == [200] * len(spaces)
    assert refusals, "24 wakes at once met no refusal under a deadline of 1 ms"
    assert all(refusal_is_well_formed(r) for r in refusals), [r.text for r in refusals]
    # each workspace holds its one acknowledged capture: the refused attempts wrote nothing
    for ws, h in spaces:
        assert http.post(f"/v1/w/{ws}/getCount", json={}, headers=h).json() == {"count": 1}
    status = ray.get(directory.residency_status.remote(), timeout=30)["wakeAdmission"]
    # every refusal the clients saw is one the directory counted, whichever rule made it
    assert (
        status["refused"] + status["refusedForStarts"] >= len(refusals) - status["refusedForRoom"]
    )


def test_a_wake_that_could_only_evict_a_workspace_in_session_is_refused_with_retry_after(
    http, admin_headers, new_workspace, service
):
    directory = directory_of(service)
    busy = [new_workspace() for _ in range(2)]
    late, late_headers = new_workspace()
    hibernated(service, http, admin_headers, [*busy, (late, late_headers)])
    residents = ray.get(directory.resident.remote(), timeout=30)
    previous = ray.get(directory.set_residency.remote(max_resident=len(residents) + 2), timeout=30)
    try:
        for ws, h in busy:  # both in session: called just now
            assert http.post(f"/v1/w/{ws}/getCount", json={}, headers=h).status_code == 200
        others = [
            ws
            for ws in ray.get(directory.resident.remote(), timeout=30)
            if ws not in {b for b, _ in busy}
        ]
        for ws in others:  # the cap is left to the two in session
            http.post(f"/v1/workspaces/{ws}/hibernate", headers=admin_headers)
        ray.get(directory.set_residency.remote(max_resident=2), timeout=30)
        # the directory asks residents for their last call at most once a second: the calls
        # that put both in session come after its last look
        time.sleep(REFRESH_INTERVAL_S * 1.5)
        for ws, h in busy:
            assert http.post(f"/v1/w/{ws}/getCount", json={}, headers=h).status_code == 200
        # the session's client would wait the refusal out: this one takes it as it comes
        refused = httpx.post(
            f"{service['url']}/v1/w/{late}/getCount", json={}, headers=late_headers, timeout=60
        )
        assert refusal_is_well_formed(refused), refused.text
        assert sorted(ray.get(directory.resident.remote(), timeout=30)) == sorted(
            ws for ws, _ in busy
        )  # neither session lost its workspace
    finally:
        ray.get(directory.set_residency.remote(max_resident=previous["max_resident"]), timeout=30)


def test_while_calls_to_an_awake_workspace_stall_a_wake_is_refused_at_once_not_queued(
    http, admin_headers, new_workspace, service
):
    """The work already admitted is late (a resident's calls hang): a new session's wake is
    answered 503 `overloaded` with Retry-After at once, and is let in once the calls answer."""
    stalled, stalled_headers = new_workspace()
    late, late_headers = new_workspace()
    hibernated(service, http, admin_headers, [(late, late_headers)])
    assert (
        http.post(f"/v1/w/{stalled}/getCount", json={}, headers=stalled_headers).status_code == 200
    )  # awake, handle cached
    handle = ray.get(directory_of(service).activate.remote(stalled), timeout=60)
    pid = ray.get(handle.ping.remote(), timeout=60)["pid"]

    async def stall_then_wake():
        async with httpx.AsyncClient(base_url=service["url"], timeout=CALL_TIMEOUT_S) as client:
            hanging = [
                asyncio.ensure_future(
                    client.post(f"/v1/w/{stalled}/getCount", json={}, headers=stalled_headers)
                )
                for _ in range(8)
            ]
            os.kill(pid, signal.SIGSTOP)
            try:
                refused = None
                deadline = time.monotonic() + SETTLE_TIMEOUT_S
                while refused is None and time.monotonic() < deadline:
                    await asyncio.sleep(0.5)  # the gate judges once per window
                    answer = await client.post(
                        f"/v1/w/{late}/getCount", json={}, headers=late_headers
                    )
                    if answer.status_code == 503:
                        refused = answer
                    else:  # woken before the stall showed: again
                        assert answer.status_code == 200, answer.text
                        await client.post(f"/v1/workspaces/{late}/hibernate", headers=admin_headers)
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
            answered = await asyncio.gather(*hanging)
            woken = await post_answered(
                client, f"/v1/w/{late}/getCount", json={}, headers=late_headers
            )
            return refused, answered, woken

    refused, answered, woken = asyncio.run(stall_then_wake())
    assert refused is not None, "no wake was refused while an awake workspace's calls hung"
    assert refusal_is_well_formed(refused), refused.text
    assert [r.status_code for r in answered] == [200] * 8  # the stalled calls still answer
    assert woken.status_code == 200 and woken.json() == {"count": 0}
