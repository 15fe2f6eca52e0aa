"""The typed client (sync and async) and the CLI against the running service."""
import asyncio
import json

import pytest

from minisphere.cli.main import main as cli_main
from minisphere.client.client import AsyncClient, Client, ServiceError
from minisphere.client.models import CaptureResult, Entry


def test_sync_client(service):
    with Client(service["url"], admin_token=service["admin"]) as admin:
        assert admin.health() == {"status": "ok"}
        assert "methods" in admin.contracts()
        created = admin.create_workspace("client-sync", label="typed")
        assert created.workspace.id == "client-sync" and created.token
        assert "client-sync" in [w.id for w in admin.list_workspaces()]
        ws = admin.workspace("client-sync", created.token)
        stored = ws.capture("Typed clients are pleasant", tags=["dx"], claim_tag="VERIFIED")
        assert isinstance(stored, CaptureResult) and stored.outcome == "stored"
        entry = ws.get_entry(stored.id)
        assert isinstance(entry, Entry) and entry.claim_tag == "VERIFIED" and entry.tags == ["dx"]
        other = ws.capture("Second fact", kind="episodic").id
        assert ws.link(stored.id, other, "relates_to", weight=0.4)["created"] is True
        assert ws.get_count() == 2
        assert [e.id for e in ws.list_recent(n=1)] == [other]
        assert ws.set_status(other, "deprecated").status == "deprecated"
        with pytest.raises(ServiceError) as info:
            ws.get_entry("00000000-0000-4000-8000-000000000000")
        assert info.value.status == 404 and info.value.code == "not_found"
        with pytest.raises(ServiceError) as info:
            ws.run_staleness_pass()
        assert info.value.status == 403
        assert admin.get_workspace("client-sync").label == "typed"
        admin.delete_workspace("client-sync")


def test_async_client(service):
    async def scenario():
        async with AsyncClient(service["url"], admin_token=service["admin"]) as admin:
            created = await admin.create_workspace()
            ws = admin.workspace(created.workspace.id, created.token)
            results = await asyncio.gather(*[ws.capture(f"async fact {i}") for i in range(20)])
            assert all(r.outcome == "stored" for r in results)
            assert await ws.get_count() == 20
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
    assert cli_main(["get", "not-an-id", *ws]) == 1
    assert "error: 422" in capsys.readouterr().err
    assert cli_main(["ws", "list", *base]) == 0
    assert "cli-space" in capsys.readouterr().out
    assert cli_main(["ws", "delete", "cli-space", *base]) == 0
