"""The control layer without Ray: the control plane's store, blueprints, ids and tokens."""

import pytest

from minisphere import errors as E
from minisphere.control.auth import bearer_token, check_workspace_id, token_hash
from minisphere.control.blueprints import (
    Blueprint,
    load_default_blueprint,
    parse_blueprint,
    parse_stored_blueprint,
)
from minisphere.control.plane import ControlPlane


def test_control_plane_tokens_and_lifecycle(tmp_path):
    cp = ControlPlane(tmp_path / "control.db")
    blueprint = load_default_blueprint(None)
    record, token = cp.create(
        blueprint, [{"name": "c", "version": "0.1", "sha256": "0" * 64}], "team-a"
    )
    other, other_token = cp.create(blueprint, [], None)
    assert record["contracts"][0]["name"] == "c" and other["id"].startswith("ws-")
    assert token not in (tmp_path / "control.db").read_bytes().decode("latin-1")
    assert cp.tokens.authenticate("team-a", token_hash(token))[0] == "ok"
    assert cp.tokens.authenticate("team-a", token_hash(other_token)) == ("other", [])
    assert cp.tokens.authenticate("team-a", token_hash("nope")) == ("invalid", [])
    with pytest.raises(E.WorkspaceExists):
        cp.create(blueprint, [], "team-a")
    cp.delete("team-a")
    assert cp.tokens.authenticate("team-a", token_hash(token)) == ("invalid", [])
    assert cp.tokens.grants("team-a") == []
    assert [a["action"] for a in cp.audit_log("team-a")] == ["delete", "create"]
    cp.close()
    assert ControlPlane(tmp_path / "control.db").get(other["id"])["id"] == other["id"]


def test_blueprints():
    assert parse_blueprint({}).bindings.scheduledTasks.limit == 1000
    assert (
        parse_blueprint(
            {"bindings": {"vector": {"provider": "hash", "dimensions": 8}}}
        ).bindings.vector.dimensions
        == 8
    )
    # a local model is one model of one size; an endpoint needs its address
    cannot_run = [
        {"model": "m", "dimensions": 8},
        {"provider": "minilm", "dimensions": 768},
        {"provider": "http", "model": "m", "dimensions": 8},
    ]
    for bad in (
        {"bindings": {"scheduledTasks": {"cron": "* * *"}}},
        {"x": 1},
        [],
        {"bindings": {"scheduledTasks": {"cron": "* * * * *", "limit": 0}}},
        *({"bindings": {"vector": v}} for v in cannot_run),
    ):
        with pytest.raises(E.InvalidArgument):
            parse_blueprint(bad)
    # one stored before the rule is read as it was written
    stored = parse_stored_blueprint({"bindings": {"vector": cannot_run[0]}})
    assert stored.bindings.vector.dimensions == 8


def test_default_vector_binding_is_int8_but_a_stored_one_keeps_its_provider(tmp_path):
    assert parse_blueprint({"bindings": {"vector": {}}}).bindings.vector.provider == "minilm-int8"
    plane = ControlPlane(tmp_path / "control.db", synchronous="NORMAL")
    record, _ = plane.create(
        parse_blueprint({"bindings": {"vector": {"provider": "minilm"}}}), [], "ws-float"
    )
    # a workspace bound before the default changed is read back with the model it was bound to
    stored = parse_stored_blueprint(plane.get(record["id"])["blueprint"])
    assert stored.bindings.vector.provider == "minilm"
    plane.close()


@pytest.mark.parametrize(
    "bad",
    [
        "..",
        "../x",
        "a/b",
        "A-b",
        "ab",
        "-ab",
        "ab-",
        "a" * 64,
        "a\x00b",
        "a b",
        "ws.1",
        5,
        None,
        "é-abc",
    ],
)
def test_workspace_id_pattern(bad):
    with pytest.raises(E.MalformedRequest):
        check_workspace_id(bad)


def test_auth_helpers():
    assert check_workspace_id("team-a1") == "team-a1"
    assert bearer_token("Bearer abc") == "abc" and bearer_token("bearer  abc ") == "abc"
    for header in (None, "", "Bearer", "Basic abc", "Bearer " + "x" * 600):
        with pytest.raises(E.Unauthenticated):
            bearer_token(header)


def test_each_creation_of_an_id_gets_a_new_generation(tmp_path):
    plane = ControlPlane(tmp_path / "control.db", synchronous="NORMAL")
    blueprint = Blueprint()
    first, _ = plane.create(blueprint, [], "ws-again")
    plane.delete("ws-again")
    second, _ = plane.create(blueprint, [], "ws-again")
    assert first["generation"] and second["generation"]
    assert first["generation"] != second["generation"]
    plane.owe_snapshot_deletion("ws-again", first["generation"], "store down")
    plane.owe_snapshot_deletion("ws-legacy", None, "store down")
    assert plane.snapshot_debts() == [("ws-again", first["generation"]), ("ws-legacy", None)]
    plane.settle_snapshot_debt("ws-again", first["generation"])
    assert plane.snapshot_debts() == [("ws-legacy", None)]
    plane.close()


def test_tokens_are_scoped_listed_without_secrets_expired_and_revoked(tmp_path):
    cp = ControlPlane(tmp_path / "control.db", synchronous="NORMAL")
    _record, first = cp.create(Blueprint(), [], "ws-tokens")
    reader = cp.tokens.issue("ws-tokens", "read", "dashboard", expires_at=2_000)
    listed = cp.tokens.list_for("ws-tokens")
    assert [t["scope"] for t in listed] == ["write", "read"]
    assert listed[1] == {
        "tokenId": reader["tokenId"],
        "scope": "read",
        "label": "dashboard",
        "createdAt": listed[1]["createdAt"],
        "expiresAt": 2_000,
        "lastUsedAt": None,
    }
    shown = repr(listed)
    assert first not in shown and reader["token"] not in shown
    assert token_hash(reader["token"]) not in shown
    assert cp.tokens.authenticate("ws-tokens", token_hash(reader["token"]), now_ms=1_000)[0] == "ok"
    assert cp.tokens.authenticate("ws-tokens", token_hash(reader["token"]), now_ms=2_000) == (
        "expired",
        [],
    )
    assert cp.tokens.whoami(token_hash(reader["token"]), now_ms=1_000)["scope"] == "read"
    assert cp.tokens.whoami(token_hash(reader["token"]), now_ms=2_000) is None
    cp.tokens.touch("ws-tokens", {reader["tokenId"]: 1_500})
    assert cp.tokens.list_for("ws-tokens")[1]["lastUsedAt"] == 1_500
    cp.tokens.revoke("ws-tokens", reader["tokenId"])
    assert [g.scope for g in cp.tokens.grants("ws-tokens")] == ["write"]
    assert cp.tokens.authenticate("ws-tokens", token_hash(reader["token"]), now_ms=1_000) == (
        "invalid",
        [],
    )
    with pytest.raises(E.NotFound):
        cp.tokens.revoke("ws-tokens", reader["tokenId"])
    with pytest.raises(E.NotFound):
        cp.tokens.issue("ws-missing", "read")
    cp.close()


def test_tokens_of_an_older_control_plane_become_write_tokens_with_ids(tmp_path):
    """A control plane migrated from before scopes: its tokens keep working as write tokens."""
    from minisphere.control.schema import migrate_control_plane
    from minisphere.engine import db

    path = tmp_path / "control.db"
    conn = db.connect(path, synchronous="NORMAL")
    migrate_control_plane(conn, 1, up_to=5)
    conn.execute(
        "INSERT INTO workspaces(id, created_at, updated_at, contracts_json, "
        "blueprint_json) VALUES ('ws-old', 1, 1, '[]', '{}')"
    )
    conn.execute("INSERT INTO workspace_tokens VALUES (?, 'ws-old', 1)", (token_hash("t"),))
    conn.close()
    cp = ControlPlane(path, synchronous="NORMAL")
    [grant] = cp.tokens.grants("ws-old")
    assert grant.scope == "write" and grant.token_id.startswith("tok-")
    assert cp.tokens.authenticate("ws-old", token_hash("t"))[0] == "ok"
    cp.close()


def test_a_node_is_told_only_which_of_its_own_copies_are_dead(tmp_path):
    """The sweep used to send every tombstone ever written to every node on every round; a
    node now names what it holds and hears back which of those belong to no live creation."""
    cp = ControlPlane(tmp_path / "control.db")
    blueprint = load_default_blueprint(None)
    live = cp.create(blueprint, [], "live")[0]["generation"]
    old = cp.create(blueprint, [], "remade")[0]["generation"]
    cp.delete("remade")
    remade = cp.create(blueprint, [], "remade")[0]["generation"]
    cp.create(blueprint, [], "deleting")
    cp.set_state("deleting", "deleting")
    gone = cp.create(blueprint, [], "gone")[0]["generation"]
    cp.delete("gone")
    held = {
        "live": live,
        "remade": old,
        "deleting": "g-any",
        "gone": gone,
        "gone-unnamed": "",
        "never-known": "g-offline",
    }
    cp.create(blueprint, [], "gone-unnamed")
    cp.delete("gone-unnamed")
    assert cp.locations.dead_copies(held) == {
        "remade": [old],
        "deleting": ["g-any"],
        "gone": [gone],
        "gone-unnamed": [""],
    }
    assert cp.locations.dead_copies({"remade": remade, "live": live}) == {}
    assert cp.locations.dead_copies({}) == {}


def test_audit_rows_past_the_kept_time_are_pruned_and_newer_ones_kept(tmp_path):
    cp = ControlPlane(tmp_path / "control.db")
    cp.create(load_default_blueprint(None), [], "audited")
    rows = cp.audit_log("audited")
    newest = max(a["at"] for a in rows)
    assert cp.prune_audit(min(a["at"] for a in rows)) == 0  # strictly older only
    assert cp.prune_audit(newest + 1) == len(rows)
    assert cp.audit_log("audited") == []
