"""The control layer without Ray: the control plane's store, blueprints, ids and tokens."""
import pytest

from minisphere import errors as E
from minisphere.control.auth import bearer_token, check_workspace_id, hash_in, token_hash
from minisphere.control.blueprints import Blueprint, load_default_blueprint, parse_blueprint
from minisphere.control.plane import ControlPlane


def test_control_plane_tokens_and_lifecycle(tmp_path):
    cp = ControlPlane(tmp_path / "control.db")
    blueprint = load_default_blueprint(None)
    record, token = cp.create(blueprint, [{"name": "c", "version": "0.1", "sha256": "0" * 64}],
                              "team-a")
    other, other_token = cp.create(blueprint, [], None)
    assert record["contracts"][0]["name"] == "c" and other["id"].startswith("ws-")
    assert token not in (tmp_path / "control.db").read_bytes().decode("latin-1")
    assert cp.authenticate("team-a", token_hash(token))[0] == "ok"
    assert cp.authenticate("team-a", token_hash(other_token)) == ("other", [])
    assert cp.authenticate("team-a", token_hash("nope")) == ("invalid", [])
    with pytest.raises(E.WorkspaceExists):
        cp.create(blueprint, [], "team-a")
    cp.delete("team-a")
    assert cp.authenticate("team-a", token_hash(token)) == ("invalid", [])
    assert cp.token_hashes("team-a") == []
    assert [a["action"] for a in cp.audit_log("team-a")] == ["delete", "create"]
    cp.close()
    assert ControlPlane(tmp_path / "control.db").get(other["id"])["id"] == other["id"]


def test_blueprints():
    assert parse_blueprint({}).bindings.scheduledTasks.limit == 1000
    assert parse_blueprint({"bindings": {"vector": {"model": "m", "dimensions": 8}}}
                           ).bindings.vector.dimensions == 8
    for bad in ({"bindings": {"scheduledTasks": {"cron": "* * *"}}}, {"x": 1}, [],
                {"bindings": {"scheduledTasks": {"cron": "* * * * *", "limit": 0}}}):
        with pytest.raises(E.InvalidArgument):
            parse_blueprint(bad)


@pytest.mark.parametrize("bad", ["..", "../x", "a/b", "A-b", "ab", "-ab", "ab-", "a" * 64,
                                 "a\x00b", "a b", "ws.1", 5, None, "é-abc"])
def test_workspace_id_pattern(bad):
    with pytest.raises(E.MalformedRequest):
        check_workspace_id(bad)


def test_auth_helpers():
    assert check_workspace_id("team-a1") == "team-a1"
    assert bearer_token("Bearer abc") == "abc" and bearer_token("bearer  abc ") == "abc"
    for header in (None, "", "Bearer", "Basic abc", "Bearer " + "x" * 600):
        with pytest.raises(E.Unauthenticated):
            bearer_token(header)
    assert hash_in(token_hash("t"), [token_hash("u"), token_hash("t")])
    assert not hash_in(token_hash("t"), [])


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
