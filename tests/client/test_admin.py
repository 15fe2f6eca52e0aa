"""The admin calls through the client: workspaces (create, list, show, delete), tokens (issue,
list, revoke, whoami), hibernation, snapshots and the maintenance runs. Both doors where both
offer the call; `get_workspace`, `whoami`, `contracts`, `prune_snapshots` and
`maintenance_runs` exist on the sync client only."""

from __future__ import annotations

import pytest

from minisphere.client import ServiceError
from minisphere.client.models import CreatedWorkspace, WorkspaceInfo
from minisphere.engine import constants as C
from minisphere.engine.methods import METHODS
from tests.client.helpers import got, new_workspace

BLUEPRINT = {
    "name": "nightly",
    "version": 2,
    "bindings": {"scheduledTasks": {"cron": "*/15 * * * *", "limit": 50}, "vector": None},
}


async def refused_with(call) -> tuple[int, str]:
    with pytest.raises(ServiceError) as caught:
        await got(call())
    return caught.value.status, caught.value.code


def test_workspaces_are_created_listed_and_deleted_with_all_their_data(run):
    async def scenario(admin):
        assert (await got(admin.health())) == {"status": "ok"}
        created = await got(
            admin.create_workspace("notes", label="team notes", blueprint=BLUEPRINT)
        )
        assert isinstance(created, CreatedWorkspace) and created.token.startswith("msw_")
        assert (created.workspace.id, created.workspace.label, created.workspace.state) == (
            "notes",
            "team notes",
            "active",
        )
        assert created.workspace.blueprint["bindings"]["scheduledTasks"]["cron"] == "*/15 * * * *"
        generated = await got(admin.create_workspace())
        listed = await got(admin.list_workspaces())
        assert all(isinstance(w, WorkspaceInfo) for w in listed)
        assert [w.id for w in listed] == sorted(["notes", generated.workspace.id])
        assert [w.id for w in await got(admin.list_workspaces(limit=1))] == [listed[0].id]

        old = admin.workspace("notes", created.token)
        await got(old.capture("a fact that goes with its workspace"))
        assert (await got(admin.delete_workspace("notes")))["deleted"] == "notes"
        assert [w.id for w in await got(admin.list_workspaces())] == [generated.workspace.id]
        assert await refused_with(lambda: old.get_count()) == (401, "unauthenticated")
        again = await got(admin.create_workspace("notes"))  # the same id, anew
        assert await got(admin.workspace("notes", again.token).get_count()) == 0
        assert await refused_with(lambda: old.get_count()) == (401, "unauthenticated")

    run(scenario)


def test_tokens_are_issued_scoped_listed_and_revoked_at_once(run):
    async def scenario(admin):
        writer, write_token = await new_workspace(admin, "scoped")
        entry = (await got(writer.capture("the read token may see this"))).id
        issued = await got(
            admin.create_token("scoped", "read", label="dashboard", expires_in_s=3600)
        )
        assert (issued["scope"], issued["label"]) == ("read", "dashboard")
        assert issued["expiresAt"] is not None and issued["token"].startswith("msw_")
        reader = admin.workspace("scoped", issued["token"])
        assert (await got(reader.get_entry(entry))).content == "the read token may see this"
        assert await refused_with(lambda: reader.capture("no")) == (403, "insufficient_scope")

        listed = await got(admin.list_tokens("scoped"))
        assert [(t["scope"], t["label"]) for t in listed] == [
            ("write", None),
            ("read", "dashboard"),
        ]
        assert issued["tokenId"] in {t["tokenId"] for t in listed}
        shown = repr(listed)
        assert write_token not in shown and issued["token"] not in shown  # never a secret

        assert await got(admin.revoke_token("scoped", issued["tokenId"])) == {
            "revoked": issued["tokenId"]
        }
        assert await refused_with(lambda: reader.get_count()) == (401, "unauthenticated")
        assert await got(writer.get_count()) == 1  # the other token still works
        assert await refused_with(lambda: admin.revoke_token("scoped", issued["tokenId"])) == (
            404,
            "not_found",
        )
        assert await refused_with(lambda: admin.create_token("nowhere", "read")) == (
            404,
            "not_found",
        )

    run(scenario)


def test_admin_calls_refuse_a_workspace_token(run):
    async def scenario(admin):
        _, token = await new_workspace(admin, "tenant")
        admin.admin_token = token  # a tenant pretending to be the admin
        for call in (
            lambda: admin.list_workspaces(),
            lambda: admin.create_workspace("x-y-z"),
            lambda: admin.delete_workspace("tenant"),
            lambda: admin.list_tokens("tenant"),
            lambda: admin.hibernate_workspace("tenant"),
        ):
            assert await refused_with(call) == (401, "unauthenticated")

    run(scenario)


def test_whoami_tells_each_token_what_it_is(admin):
    created = admin.create_workspace("whoami")
    read = admin.create_token("whoami", "read", label="ro")
    assert admin.whoami() == {"kind": "admin"}
    assert admin.whoami(created.token) == {
        "kind": "workspace",
        "workspace": "whoami",
        "tokenId": created.token_id,
        "scope": "write",
        "label": None,
        "expiresAt": None,
    }
    assert admin.whoami(read["token"])["scope"] == "read"
    admin.revoke_token("whoami", read["tokenId"])
    with pytest.raises(ServiceError) as caught:
        admin.whoami(read["token"])
    assert caught.value.status == 401


def test_get_workspace_shows_whether_it_is_resident_and_hibernation_releases_it(admin):
    ws = admin.workspace("sleepy", admin.create_workspace("sleepy").token)
    assert admin.get_workspace("sleepy").resident is False  # created, never called
    entry = ws.capture("kept across hibernation").id
    assert admin.get_workspace("sleepy").resident is True
    slept = admin.hibernate_workspace("sleepy")
    assert slept["hibernated"] is True and slept["snapshot"]
    assert admin.get_workspace("sleepy").resident is False
    assert admin.hibernate_workspace("sleepy")["hibernated"] is False  # nothing to release
    assert ws.get_entry(entry).content == "kept across hibernation"  # woken by the call
    with pytest.raises(ServiceError) as caught:
        admin.get_workspace("nowhere")
    assert (caught.value.status, caught.value.code) == (404, "not_found")


def test_prune_snapshots_keeps_only_the_newest_versions(admin):
    ws = admin.workspace("pruned", admin.create_workspace("pruned").token)
    for n in range(3):
        ws.capture(f"fact {n} before a snapshot")
        admin.hibernate_workspace("pruned")
    pruned = admin.prune_snapshots("pruned", keep=2)
    assert len(pruned["deleted"]) == 2 and len(pruned["kept"]) == 2
    assert pruned["kept"][-1] == pruned["snapshot"]["version"]
    assert pruned["snapshot"]["entryCount"] == 3


def test_maintenance_runs_list_the_audited_passes(admin, clock):
    admin.create_workspace("audited")
    admin.create_workspace("quiet")
    ws = admin.workspace("audited")
    ws.capture("The queue is down right now")
    clock.advance(ms=C.STALE_AFTER_MS["volatile"])
    assert ws.run_staleness_pass(limit=5)["marked"] == 1
    admin.workspace("quiet").run_staleness_pass()
    runs = admin.maintenance_runs("audited")
    assert [(r["workspaceId"], r["trigger"], r["outcome"], r["marked"]) for r in runs] == [
        ("audited", "manual", "ok", 1)
    ]
    assert {r["workspaceId"] for r in admin.maintenance_runs()} == {"audited", "quiet"}
    assert len(admin.maintenance_runs(limit=1)) == 1


def test_contracts_lists_every_routed_method(admin):
    listed = admin.contracts()
    assert {m["name"]: m["access"] for m in listed["methods"]} == {
        name: method.access for name, method in METHODS.items()
    }


def test_the_client_restores_a_snapshot_version_and_a_moment_needs_replication(admin):
    admin.create_workspace("restoring")
    ws = admin.workspace("restoring")
    ws.capture("kept by the snapshot")
    version = admin.snapshot("restoring")["version"]
    ws.capture("undone by the restore")
    assert [v["version"] for v in admin.list_snapshots("restoring")] == [version]
    restored = admin.restore("restoring", version=version)
    assert restored["version"] == version and restored["newestVersion"] != version
    assert ws.get_count() == 1
    with pytest.raises(ServiceError) as refused:
        admin.restore("restoring", timestamp="2026-12-02T06:00:00Z")
    assert refused.value.status == 422 and "replication" in refused.value.message
    with pytest.raises(ValueError):
        admin.restore("restoring")
