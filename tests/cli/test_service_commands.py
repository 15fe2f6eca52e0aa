"""The `minisphere` commands that talk to a running service (ws, token, runs and the workspace
commands), against the real app served by uvicorn over real engine files: what they print,
their exit codes, and a clear one-line error for bad input."""

from __future__ import annotations

import json

import pytest

from minisphere.settings import ADMIN_TOKEN_FILE
from tests.support.engine_gateway import ADMIN_TOKEN
from tests.support.tcp_relay import free_port


def create(cli, workspace_id: str, *flags: str) -> dict:
    ran = cli("ws", "create", workspace_id, *flags)
    assert ran.code == 0, ran.err
    return ran.json()


def ok(ran):
    assert (ran.code, ran.err) == (0, ""), ran.err
    return ran.json()


def test_ws_commands_create_list_show_hibernate_prune_and_delete(service, cli):
    created = create(cli, "notes", "--label", "team notes")
    assert created["workspace"]["id"] == "notes" and created["token"].startswith("msw_")
    assert created["workspace"]["label"] == "team notes"
    create(cli, "other")
    assert [w["id"] for w in ok(cli("ws", "list"))] == ["notes", "other"]
    assert ok(cli("ws", "show", "notes"))["resident"] is False
    ok(cli("capture", "kept through hibernation", "-w", "notes"))
    assert ok(cli("ws", "show", "notes"))["resident"] is True
    slept = ok(cli("ws", "hibernate", "notes"))
    assert slept["hibernated"] is True and slept["snapshot"]
    pruned = ok(cli("ws", "prune-snapshots", "notes", "--keep", "1"))
    assert len(pruned["kept"]) == 1 and pruned["deleted"] == [slept["snapshot"]]
    assert ok(cli("ws", "delete", "notes"))["deleted"] == "notes"
    gone = cli("ws", "show", "notes")
    assert gone.code == 1 and gone.out == "" and "404 not_found" in gone.err
    assert [w["id"] for w in ok(cli("ws", "list"))] == ["other"]


def test_ws_snapshot_snapshots_and_restore_by_version_or_moment(service, cli):
    create(cli, "undo")
    ok(cli("capture", "kept by the snapshot", "-w", "undo"))
    version = ok(cli("ws", "snapshot", "undo"))["version"]
    ok(cli("capture", "undone by the restore", "-w", "undo"))
    assert [v["version"] for v in ok(cli("ws", "snapshots", "undo"))] == [version]
    assert ok(cli("ws", "restore", "undo", "--version", version))["version"] == version
    assert ok(cli("count", "-w", "undo"))["count"] == 1
    moment = cli("ws", "restore", "undo", "--at", "2026-12-02T06:00:00Z")
    assert moment.code == 1 and "422 invalid_argument" in moment.err  # no replica here
    neither = cli("ws", "restore", "undo")
    assert neither.code == 2 and "one of the arguments --version --at is required" in neither.err


def test_ws_create_reads_a_blueprint_file(service, cli, tmp_path):
    path = tmp_path / "blueprint.json"
    path.write_text(
        json.dumps(
            {
                "name": "nightly",
                "version": 1,
                "bindings": {
                    "scheduledTasks": {"cron": "*/15 * * * *", "limit": 50},
                    "vector": None,
                },
            }
        )
    )
    created = create(cli, "scheduled", "--blueprint", str(path))
    assert created["workspace"]["blueprint"]["bindings"]["scheduledTasks"] == {
        "cron": "*/15 * * * *",
        "limit": 50,
    }


def test_token_commands_issue_list_and_revoke(service, cli):
    write_token = create(cli, "tokens")["token"]
    issued = ok(
        cli(
            "token",
            "create",
            "tokens",
            "--scope",
            "read",
            "--label",
            "dashboard",
            "--expires-in-s",
            "600",
        )
    )
    assert (issued["scope"], issued["label"]) == ("read", "dashboard") and issued["expiresAt"]
    listed = cli("token", "list", "tokens")
    assert [(t["scope"], t["label"]) for t in ok(listed)] == [
        ("write", None),
        ("read", "dashboard"),
    ]
    assert issued["token"] not in listed.out and write_token not in listed.out
    read = ("-w", "tokens", "--token", issued["token"])
    assert ok(cli("count", *read)) == {"count": 0}
    refused = cli("capture", "a write with a read token", *read)
    assert refused.code == 1 and "403 insufficient_scope" in refused.err
    assert ok(cli("token", "revoke", "tokens", issued["tokenId"])) == {"revoked": issued["tokenId"]}
    after = cli("count", *read)
    assert after.code == 1 and "401 unauthenticated" in after.err


def test_workspace_commands_round_trip(service, cli, monkeypatch):
    monkeypatch.setenv("MINISPHERE_WORKSPACE", "calls")
    monkeypatch.setenv("MINISPHERE_TOKEN", create(cli, "calls")["token"])
    first = ok(
        cli(
            "capture",
            "We chose SQLite per workspace",
            "--tag",
            "design",
            "--tag",
            "db",
            "--kind",
            "semantic",
            "--claim-tag",
            "VERIFIED",
            "--importance",
            "0.9",
        )
    )
    second = ok(cli("capture", "The design review on Tuesday", "--kind", "episodic"))
    a, b = first["id"], second["id"]
    entry = ok(cli("get", a))
    assert (entry["tags"], entry["kind"], entry["claimTag"], entry["importance"]) == (
        ["db", "design"],
        "semantic",
        "VERIFIED",
        0.9,
    )
    assert (
        ok(cli("append", a, "for isolation"))["content"]
        == "We chose SQLite per workspace\nfor isolation"
    )
    assert (
        ok(cli("update", a, "We chose one SQLite file per workspace"))["content"]
        == "We chose one SQLite file per workspace"
    )
    assert ok(cli("status", a, "draft"))["status"] == "draft"
    assert ok(cli("link", b, a, "caused_by", "--weight", "0.5"))["edge"]["weight"] == 0.5
    assert [i["entry"]["id"] for i in ok(cli("connections", a))["items"]] == [b]
    assert ok(cli("unlink", b, a, "caused_by")) == {"removed": True}
    assert [e["id"] for e in ok(cli("recent", "-n", "1", "--tag", "design"))] == [a]
    assert ok(cli("count")) == {"count": 2}
    assert ok(cli("tags"))["tags"] == [{"tag": "db", "count": 1}, {"tag": "design", "count": 1}]
    assert ok(cli("stats"))["byKind"] == {"episodic": 1, "semantic": 1}
    assert ok(cli("brief"))["count"] == 2
    found = ok(cli("recall", "SQLite file", "--top-k", "1"))
    assert [item["id"] for item in found["items"]] == [a]
    assert ok(cli("call", "listRecent", '{"n": 5}'))["items"][0]["id"] in {a, b}
    assert ok(cli("forget", b)) == {"forgotten": True, "id": b}
    assert ok(cli("call", "getCount")) == {"count": 1}


def test_idempotency_key_makes_a_repeated_cli_write_apply_once(service, cli, monkeypatch):
    monkeypatch.setenv("MINISPHERE_WORKSPACE", "keys")
    create(cli, "keys")
    once = ok(cli("capture", "sent twice, stored once", "--idempotency-key", "k-1"))
    assert ok(cli("capture", "sent twice, stored once", "--idempotency-key", "k-1")) == once
    body = '{"content": "through call, twice"}'
    stored = ok(cli("call", "capture", body, "--idempotency-key", "k-2"))
    assert ok(cli("call", "capture", body, "--idempotency-key", "k-2")) == stored
    assert ok(cli("count")) == {"count": 2}
    reused = cli("capture", "another body", "--idempotency-key", "k-1")
    assert reused.code == 1 and "409 idempotency_key_reused" in reused.err
    assert ok(cli("count")) == {"count": 2}


def test_runs_lists_the_passes_the_admin_ran(service, cli):
    create(cli, "maintained")
    create(cli, "untouched")
    passed = ok(cli("call", "runStalenessPass", '{"limit": 5}', "-w", "maintained"))
    assert passed["remaining"] == 0
    runs = ok(cli("runs", "-w", "maintained"))
    assert [(r["workspaceId"], r["trigger"], r["outcome"]) for r in runs] == [
        ("maintained", "manual", "ok")
    ]
    assert ok(cli("runs", "-w", "untouched")) == []


def blueprint_file(tmp_path, text: str) -> str:
    path = tmp_path / "blueprint.json"
    path.write_text(text, encoding="utf-8")
    return str(path)


# (case, argv builder taking tmp_path, exit code, what stderr says)
BAD_INPUT = [
    ("no-workspace", lambda t: ["capture", "x"], 1, "error: give --workspace"),
    (
        "call-body-not-json",
        lambda t: ["call", "getStats", "{bad", "-w", "seeded"],
        1,
        "error: the body is not valid JSON",
    ),
    (
        "blueprint-file-missing",
        lambda t: ["ws", "create", "new-one", "--blueprint", str(t / "missing.json")],
        1,
        "error: cannot read the blueprint file",
    ),
    (
        "blueprint-file-not-json",
        lambda t: ["ws", "create", "new-one", "--blueprint", blueprint_file(t, "{nope")],
        1,
        "is not valid JSON",
    ),
    (
        "blueprint-bad-cron",
        lambda t: [
            "ws",
            "create",
            "new-one",
            "--blueprint",
            blueprint_file(
                t, '{"bindings": {"scheduledTasks": {"cron": "99 * * * *", "limit": 1}}}'
            ),
        ],
        1,
        "error: 422 invalid_argument",
    ),
    (
        "workspace-id-malformed",
        lambda t: ["ws", "create", "Bad_Id"],
        1,
        "error: 400 malformed_request",
    ),
    ("workspace-exists", lambda t: ["ws", "create", "seeded"], 1, "error: 409 workspace_exists"),
    (
        "entry-id-malformed",
        lambda t: ["get", "123", "-w", "seeded"],
        1,
        "error: 422 invalid_argument",
    ),
    (
        "status-unknown",
        lambda t: ["status", "123e4567-e89b-42d3-a456-426614174000", "archived", "-w", "seeded"],
        1,
        "error: 422 invalid_argument",
    ),
    (
        "entry-missing",
        lambda t: ["forget", "123e4567-e89b-42d3-a456-426614174000", "-w", "seeded"],
        1,
        "error: 404 not_found",
    ),
    (
        "idempotency-key-malformed",
        lambda t: ["capture", "x", "-w", "seeded", "--idempotency-key", "two words"],
        1,
        "error: 400 malformed_request",
    ),
    (
        "bad-workspace-token",
        lambda t: ["count", "-w", "seeded", "--token", "msw_nobody"],
        1,
        "error: 401 unauthenticated",
    ),
    (
        "bad-admin-token",
        lambda t: ["ws", "list", "--admin-token", "msa_nobody"],
        1,
        "error: 401 unauthenticated",
    ),
    (
        "runs-limit-out-of-range",
        lambda t: ["runs", "--limit", "0"],
        1,
        "error: 400 malformed_request",
    ),
    (
        "service-unreachable",
        lambda t: ["count", "-w", "seeded", "--url", f"http://127.0.0.1:{free_port()}"],
        1,
        "error: cannot reach http://127.0.0.1:",
    ),
    (
        "importance-not-a-number",
        lambda t: ["capture", "x", "-w", "seeded", "--importance", "high"],
        2,
        "invalid float value: 'high'",
    ),
    (
        "scope-not-a-choice",
        lambda t: ["token", "create", "seeded", "--scope", "admin"],
        2,
        "invalid choice: 'admin'",
    ),
    ("ws-without-subcommand", lambda t: ["ws"], 2, "usage: minisphere ws"),
]


@pytest.mark.parametrize(
    "argv, code, message", [c[1:] for c in BAD_INPUT], ids=[c[0] for c in BAD_INPUT]
)
def test_bad_input_exits_non_zero_with_a_clear_message_and_changes_nothing(
    service, cli, tmp_path, argv, code, message
):
    create(cli, "seeded")
    before = ok(cli("ws", "list")), ok(cli("call", "listRecent", "-w", "seeded"))
    ran = cli(*argv(tmp_path))
    assert ran.code == code and ran.out == ""
    assert message in ran.err and "Traceback" not in ran.err
    if code == 1:
        assert ran.err.startswith("error: ") and ran.err.count("\n") == 1  # one line
    assert (ok(cli("ws", "list")), ok(cli("call", "listRecent", "-w", "seeded"))) == before


def test_without_flag_or_variable_the_admin_token_comes_from_the_data_folder(
    service, cli, monkeypatch, tmp_path
):
    monkeypatch.delenv("MINISPHERE_ADMIN_TOKEN")
    data = tmp_path / "embedded-data"
    data.mkdir()
    monkeypatch.setenv("MINISPHERE_DATA_DIR", str(data))
    refused = cli("ws", "list")  # no token file yet: no token at all
    assert refused.code == 1 and refused.err.startswith("error: no token to send")
    refused = cli("export", "anything", "-o", str(tmp_path / "never.jsonl"))
    assert refused.code == 1 and refused.err.startswith("error: no token to send")
    (data / ADMIN_TOKEN_FILE).write_text(ADMIN_TOKEN + "\n", encoding="utf-8")
    assert ok(cli("ws", "list")) == []
    wrong = cli("ws", "list", "--admin-token", "msa_nobody")  # the flag wins over the file
    assert wrong.code == 1 and "401 unauthenticated" in wrong.err
