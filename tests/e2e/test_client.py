"""The typed clients against the running service: over HTTP (sync and async), in the cluster
(the same methods, auth and errors without the HTTP proxy), and the CLI."""

import asyncio
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import ray

from actors.in_cluster import AsyncInClusterWorkspace, connect_in_cluster
from minisphere.cli.main import main as cli_main
from minisphere.client import AsyncClient, Client, ServiceError
from minisphere.client.models import CaptureResult, Entry


def exercise_workspace(ws) -> None:
    """What every workspace client must do alike (HTTP or in-cluster)."""
    stored = ws.capture("Typed clients are pleasant", tags=["dx"], claim_tag="VERIFIED")
    assert isinstance(stored, CaptureResult) and stored.outcome == "stored"
    entry = ws.get_entry(stored.id)
    assert isinstance(entry, Entry) and entry.claim_tag == "VERIFIED" and entry.tags == ["dx"]
    other = ws.capture("Second fact", kind="episodic").id
    assert ws.link(stored.id, other, "relates_to", weight=0.4)["created"] is True
    assert ws.get_count() == 2
    assert [e.id for e in ws.list_recent(n=1)] == [other]
    assert ws.recall("typed clients", top_k=3).items[0].id == stored.id
    assert ws.append(stored.id, "and typed").content.endswith("and typed")
    assert ws.set_status(other, "deprecated").status == "deprecated"
    assert ws.connections(stored.id)["items"][0]["entry"]["id"] == other
    assert ws.graph_view([stored.id])["nodes"]
    assert {"tag": "dx", "count": 1} in ws.get_tags()["tags"]
    assert ws.get_stats()["count"] == 2 and ws.get_brief()["count"] == 2
    assert ws.unlink(stored.id, other, "relates_to") == {"removed": True}
    once = [
        ws.append(stored.id, "keyed once", idempotency_key=f"{type(ws).__name__}-a1")
        for _ in range(2)
    ]  # sent twice, applied once
    assert once[0] == once[1] and ws.get_entry(stored.id).content.count("keyed once") == 1
    with pytest.raises(ServiceError) as info:
        ws.append(stored.id, "another text", idempotency_key=f"{type(ws).__name__}-a1")
    assert info.value.status == 409 and info.value.code == "idempotency_key_reused"
    with pytest.raises(ServiceError) as info:
        ws.get_entry("00000000-0000-4000-8000-000000000000")
    assert info.value.status == 404 and info.value.code == "not_found"
    with pytest.raises(ServiceError) as info:
        ws.capture("")
    assert info.value.status == 422 and info.value.code == "invalid_argument"
    with pytest.raises(ServiceError) as info:
        ws.run_staleness_pass()
    assert info.value.status == 403
    assert ws.forget(other) == {"forgotten": True, "id": other}


def test_sync_client(service):
    with Client(service["url"], admin_token=service["admin"]) as admin:
        assert admin.health() == {"status": "ok"}
        assert "methods" in admin.contracts()
        created = admin.create_workspace("client-sync", label="typed")
        assert created.workspace.id == "client-sync" and created.token
        assert "client-sync" in [w.id for w in admin.list_workspaces()]
        exercise_workspace(admin.workspace("client-sync", created.token))
        assert admin.get_workspace("client-sync").label == "typed"
        admin.delete_workspace("client-sync")


def test_in_cluster_client_answers_like_the_http_client(service):
    with Client(service["url"], admin_token=service["admin"]) as admin:
        created = admin.create_workspace("client-in-cluster")
        try:
            ws = connect_in_cluster(
                "client-in-cluster", created.token, namespace=service["config"].namespace
            )
            exercise_workspace(ws)
            ws.close()
            for token, status in (("wrong-token-value-1234", 401), (created.token, None)):
                probe = connect_in_cluster(
                    "client-in-cluster", token, namespace=service["config"].namespace
                )
                if status is None:
                    assert probe.get_count() == 1
                else:
                    with pytest.raises(ServiceError) as info:
                        probe.get_count()
                    assert info.value.status == status
                probe.close()
        finally:
            admin.delete_workspace("client-in-cluster")


def test_in_cluster_client_works_inside_a_ray_task(service):
    with Client(service["url"], admin_token=service["admin"]) as admin:
        created = admin.create_workspace("client-in-task")
        namespace = service["config"].namespace

        @ray.remote(num_cpus=0)
        def agent(token):
            from actors.in_cluster import connect_in_cluster as connect

            notes = connect("client-in-task", token, namespace=namespace)
            notes.capture("captured by an agent running on the cluster")
            return notes.get_count()

        try:
            assert ray.get(agent.remote(created.token), timeout=120) == 1
            assert admin.workspace("client-in-task", created.token).get_count() == 1
        finally:
            admin.delete_workspace("client-in-task")


def test_async_clients(service):
    async def scenario():
        async with AsyncClient(service["url"], admin_token=service["admin"]) as admin:
            created = await admin.create_workspace()
            for ws in (
                admin.workspace(created.workspace.id, created.token),
                AsyncInClusterWorkspace(
                    created.workspace.id, created.token, service["config"].namespace
                ),
            ):
                results = await asyncio.gather(
                    *[ws.capture(f"{type(ws).__name__} fact {i}") for i in range(20)]
                )
                assert all(r.outcome == "stored" for r in results)
            assert await admin.workspace(created.workspace.id, created.token).get_count() == 40
            await admin.delete_workspace(created.workspace.id)

    asyncio.run(scenario())


def test_cli(service, capsys):
    base = ["--url", service["url"], "--admin-token", service["admin"]]
    assert cli_main(["ws", "create", "cli-space", *base]) == 0
    token = json.loads(capsys.readouterr().out)["token"]
    ws = ["-w", "cli-space", "--token", token, "--url", service["url"]]
    assert cli_main(["capture", "The CLI works", "--tag", "cli", "--kind", "semantic", *ws]) == 0
    entry_id = json.loads(capsys.readouterr().out)["id"]
    assert cli_main(["get", entry_id, *ws]) == 0
    assert json.loads(capsys.readouterr().out)["tags"] == ["cli"]
    assert cli_main(["count", *ws]) == 0
    assert json.loads(capsys.readouterr().out) == {"count": 1}
    assert cli_main(["call", "listRecent", '{"n": 1}', *ws]) == 0
    assert len(json.loads(capsys.readouterr().out)["items"]) == 1
    for _ in range(2):
        assert cli_main(["append", entry_id, "once", "--idempotency-key", "cli-1", *ws]) == 0
    capsys.readouterr()
    assert cli_main(["get", entry_id, *ws]) == 0
    assert json.loads(capsys.readouterr().out)["content"].count("once") == 1
    assert cli_main(["get", "not-an-id", *ws]) == 1
    assert "error: 422" in capsys.readouterr().err
    assert cli_main(["ws", "list", *base]) == 0
    assert "cli-space" in capsys.readouterr().out
    assert cli_main(["ws", "delete", "cli-space", *base]) == 0


def readme_shell_lines() -> list[str]:
    """The shell commands of the README's "same from the shell" paragraph, in its order."""
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    paragraph = readme[readme.index("The same from the shell") :].split("\n\n", 1)[0]
    return [
        cmd
        for cmd in re.findall(r"`([^`]+)`", paragraph)
        if cmd.startswith(("minisphere ", "export "))
    ]


def json_values(text: str) -> list:
    """The JSON values printed one after another (the CLI indents each)."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while (at := len(text) - len(text[at:].lstrip())) < len(text):
        value, at = decoder.raw_decode(text, at)
        values.append(value)
    return values


def test_the_readme_shell_lines_run_as_written(service, http, admin_headers, tmp_path):
    """Run in order, the README's lines create a workspace, capture and recall what they
    captured; only the token the first prints is filled in (the README writes `msw_...`)."""
    lines = readme_shell_lines()
    assert [line.split()[:2] for line in lines] == [
        ["minisphere", "ws"],
        ["export", "MINISPHERE_WORKSPACE=notes"],
        ["minisphere", "capture"],
        ["minisphere", "recall"],
    ], lines
    env = {
        **os.environ,
        "MINISPHERE_URL": service["url"],
        "MINISPHERE_ADMIN_TOKEN": service["admin"],
    }
    created = subprocess.run(
        lines[0].split(), env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert created.returncode == 0, created.stderr
    token = json.loads(created.stdout)["token"]
    try:
        rest = "\n".join([lines[1].replace("msw_...", token), *lines[2:]])
        done = subprocess.run(
            ["bash", "-euc", rest],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        answers = json_values(done.stdout)
        assert answers[0]["outcome"] == "stored"
        assert [item["id"] for item in answers[-1]["items"]] == [answers[0]["id"]]
    finally:
        http.delete("/v1/workspaces/notes", headers=admin_headers)
