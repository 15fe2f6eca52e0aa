"""Helpers of the end-to-end tests: finding the actor that holds a workspace right now, and the
few HTTP calls the durability drills repeat (capture, count, snapshot)."""

from __future__ import annotations

import asyncio

import ray

from actors.directory.actor import DIRECTORY_NAME


def directory_of(service):
    return ray.get_actor(DIRECTORY_NAME, namespace=service["config"].namespace)


def workspace_actor(service, workspace_id: str):
    """The live actor holding the workspace, or None (hibernated, killed, never woken).
    Actor names are random and permanent; the directory knows which one holds it."""
    name = ray.get(directory_of(service).actor_name_of.remote(workspace_id), timeout=30)
    if name is None:
        return None
    try:
        return ray.get_actor(name, namespace=service["config"].namespace)
    except ValueError:
        return None


def capture(http, ws, h, text, **extra) -> str:
    """Capture `text` (and any other capture fields) over HTTP; the new entry's id."""
    r = http.post(f"/v1/w/{ws}/capture", headers=h, json={"content": text, **extra})
    assert r.status_code == 200, r.text
    return r.json()["id"]


def count(http, ws, h) -> int:
    return http.post(f"/v1/w/{ws}/getCount", headers=h, json={}).json()["count"]


def snapshot(http, ws, admin) -> dict:
    """Snapshot the workspace now (admin route); the manifest of the new version."""
    r = http.post(f"/v1/workspaces/{ws}/snapshot", headers=admin)
    assert r.status_code == 200, r.text
    return r.json()


async def post_answered(http, path: str, refusals: list | None = None, **request):
    """POST until the answer is not an overload refusal (503 with Retry-After), pausing as
    each refusal asks, as the clients do: the final answer. Refusals are kept in `refusals`."""
    while True:
        response = await http.post(path, **request)
        if response.status_code != 503 or "retry-after" not in response.headers:
            return response
        assert response.json()["error"]["code"] == "overloaded", response.text
        if refusals is not None:
            refusals.append(response)
        await asyncio.sleep(float(response.headers["retry-after"]))
