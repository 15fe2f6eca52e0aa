"""Writes with an Idempotency-Key over real HTTP: a repeat answers the stored result (header
`Idempotent-Replay: true`) and writes nothing, and the drill — kill -9 the workspace actor under
500 concurrent keyed writes whose clients retry every 503 with the same key — ends with every
write present exactly once."""

import asyncio
import os
import signal

import httpx
import ray

from minisphere.engine import db
from tests.e2e.helpers import workspace_actor

DRILL_WRITES = 500
DRILL_ENTRIES = 10
DRILL_CONCURRENCY = 32
RETRY_PAUSE_S = 0.2


def test_repeated_keyed_append_is_replayed_not_applied_again(http, new_workspace):
    ws, h = new_workspace()
    entry = http.post(f"/v1/w/{ws}/capture", headers=h, json={"content": "the base"}).json()["id"]
    keyed = {**h, "Idempotency-Key": "append-1"}
    first = http.post(f"/v1/w/{ws}/append", headers=keyed, json={"id": entry, "addition": "one"})
    again = http.post(f"/v1/w/{ws}/append", headers=keyed, json={"id": entry, "addition": "one"})
    assert first.status_code == again.status_code == 200
    assert "Idempotent-Replay" not in first.headers
    assert again.headers["Idempotent-Replay"] == "true"
    assert again.json() == first.json()
    content = http.post(f"/v1/w/{ws}/getEntry", headers=h, json={"id": entry}).json()["content"]
    assert content.count("one") == 1


def test_same_key_with_another_body_is_409_and_changes_nothing(http, new_workspace):
    ws, h = new_workspace()
    keyed = {**h, "Idempotency-Key": "capture-1"}
    assert (
        http.post(f"/v1/w/{ws}/capture", headers=keyed, json={"content": "first text"}).status_code
        == 200
    )
    reused = http.post(f"/v1/w/{ws}/capture", headers=keyed, json={"content": "other text"})
    assert reused.status_code == 409
    assert reused.json()["error"]["code"] == "idempotency_key_reused"
    assert http.post(f"/v1/w/{ws}/getCount", headers=h, json={}).json()["count"] == 1


def test_malformed_idempotency_key_is_400_before_anything_runs(http, new_workspace):
    ws, h = new_workspace()
    for bad in ("", "x" * 201, "with space"):
        r = http.post(
            f"/v1/w/{ws}/capture",
            headers={**h, "Idempotency-Key": bad},
            json={"content": "never stored"},
        )
        assert r.status_code == 400, (bad, r.text)
        assert r.json()["error"]["code"] == "malformed_request"
    assert http.post(f"/v1/w/{ws}/getCount", headers=h, json={}).json()["count"] == 0


async def _keyed_writes_with_a_kill(url, ws, headers, entries, kill):
    """Half captures, half appends, each with its own key; every 503 is retried with the same
    key until it is answered. Returns {write number: status of its final answer}."""
    final, sem = {}, asyncio.Semaphore(DRILL_CONCURRENCY)
    async with httpx.AsyncClient(base_url=url, timeout=180) as client:

        async def one(i):
            if i % 2:
                method, body = (
                    "append",
                    {"id": entries[(i // 2) % DRILL_ENTRIES], "addition": f"appended-{i}-end"},
                )
            else:
                method, body = "capture", {"content": f"captured fact {i} of the drill"}
            keyed = {**headers, "Idempotency-Key": f"drill-{i}"}
            while True:
                async with sem:
                    r = await client.post(f"/v1/w/{ws}/{method}", headers=keyed, json=body)
                if r.status_code != 503:
                    final[i] = r.status_code
                    return
                await asyncio.sleep(RETRY_PAUSE_S)

        tasks = [asyncio.create_task(one(i)) for i in range(DRILL_WRITES)]
        while len(final) < DRILL_WRITES // 5:
            await asyncio.sleep(0.01)
        await asyncio.to_thread(kill)
        await asyncio.gather(*tasks)
    return final


def test_kill_during_keyed_writes_applies_each_exactly_once(http, new_workspace, service):
    ws, h = new_workspace()
    entries = [
        http.post(f"/v1/w/{ws}/capture", headers=h, json={"content": f"drill entry {n}"}).json()[
            "id"
        ]
        for n in range(DRILL_ENTRIES)
    ]

    def kill():
        pid = ray.get(workspace_actor(service, ws).stats.remote())["pid"]
        os.kill(pid, signal.SIGKILL)

    final = asyncio.run(_keyed_writes_with_a_kill(service["url"], ws, h, entries, kill))
    assert sorted(final) == list(range(DRILL_WRITES))
    assert set(final.values()) == {200}

    count = http.post(f"/v1/w/{ws}/getCount", headers=h, json={}).json()["count"]
    assert count == DRILL_ENTRIES + DRILL_WRITES // 2
    assert ray.get(workspace_actor(service, ws).stats.remote())["restarted"] is True
    conn = db.connect(service["data_dir"] / "workspaces" / ws / "workspace.db", readonly=True)
    try:
        captured = [
            c
            for (c,) in conn.execute(
                "SELECT content FROM entries WHERE content LIKE 'captured fact %'"
            )
        ]
        assert sorted(captured) == sorted(
            f"captured fact {i} of the drill" for i in range(0, DRILL_WRITES, 2)
        )
        for n, entry in enumerate(entries):
            (content,) = conn.execute(
                "SELECT content FROM entries WHERE id = ?", (entry,)
            ).fetchone()
            mine = [i for i in range(1, DRILL_WRITES, 2) if (i // 2) % DRILL_ENTRIES == n]
            assert [content.count(f"appended-{i}-end") for i in mine] == [1] * len(mine)
            (revisions,) = conn.execute(
                "SELECT COUNT(*) FROM revisions WHERE entry_id = ?", (entry,)
            ).fetchone()
            assert revisions == len(mine)
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
