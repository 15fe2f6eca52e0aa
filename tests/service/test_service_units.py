"""The service's plain-Python parts, without Ray: group commit, read pool, control plane,
auth, config and the error mapping."""
import threading

import pytest

from minisphere import Workspace
from minisphere import errors as E
from minisphere import service_errors as S
from minisphere.auth import bearer_token, check_workspace_id, hash_in, token_hash
from minisphere.blueprints import load_default_blueprint, parse_blueprint
from minisphere.config import ConfigError, load_config
from minisphere.control_plane import ControlPlane
from minisphere.group_commit import GroupCommitWriter
from minisphere.http_errors import error_response, status_for
from minisphere.read_pool import ReadPool


def submit_and_wait(writer, calls):
    done, results = threading.Event(), [None] * len(calls)
    remaining = [len(calls)]
    lock = threading.Lock()

    def callback_for(i):
        def callback(ok, result, timings):
            results[i] = (ok, result, timings)
            with lock:
                remaining[0] -= 1
                if remaining[0] == 0:
                    done.set()
        return callback
    for i, (method, body) in enumerate(calls):
        writer.submit(method, body, callback_for(i))
    assert done.wait(30)
    return results


def test_group_commit_batches_and_isolates_failures(tmp_path):
    ws = Workspace(tmp_path / "w.db", synchronous="NORMAL")
    writer = GroupCommitWriter(ws, max_batch=64)
    calls = [("capture", {"content": f"entry {i}"}) for i in range(200)]
    calls[50] = ("capture", {"content": ""})                 # invalid: fails alone
    calls[51] = ("recall", {"query": 5})                      # invalid arguments
    results = submit_and_wait(writer, calls)
    assert not results[50][0] and isinstance(results[50][1], E.InvalidArgument)
    assert not results[51][0]
    ok = [r for r in results if r[0]]
    assert len(ok) == 198
    assert all({"queue_ms", "engine_ms", "batch"} <= set(r[2]) for r in results)
    assert writer.batches < 200 and writer.largest_batch > 1
    writer.close()
    assert ws.get_count() == {"count": 198}
    ws.close()


def test_group_commit_survives_an_unexpected_error(tmp_path, monkeypatch):
    ws = Workspace(tmp_path / "w.db", synchronous="NORMAL")
    real = ws.run_batch

    def flaky(calls):
        calls = list(calls)
        if any(body.get("content") == "boom" for _, body in calls):
            raise RuntimeError("unexpected")
        return real(calls)
    monkeypatch.setattr(ws, "run_batch", flaky)
    writer = GroupCommitWriter(ws, max_batch=64)
    results = submit_and_wait(writer, [("capture", {"content": c}) for c in ("a", "boom", "b")])
    assert [r[0] for r in results] == [True, False, True]
    writer.close()
    assert ws.get_count() == {"count": 2}
    ws.close()


def test_read_pool_sees_acknowledged_writes(tmp_path):
    ws = Workspace(tmp_path / "w.db", synchronous="NORMAL")
    pool = ReadPool(tmp_path / "w.db", threads=2)
    stored = ws.capture("hello")
    result, timings = pool.submit("getEntry", {"id": stored["id"]}).result()
    assert result["content"] == "hello" and "engine_ms" in timings
    with pytest.raises(E.NotFound):
        pool.read("capture", {"content": "no writes here"})
    pool.close()
    ws.close()


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
    with pytest.raises(S.WorkspaceExists):
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
    with pytest.raises(S.MalformedRequest):
        check_workspace_id(bad)


def test_auth_helpers():
    assert check_workspace_id("team-a1") == "team-a1"
    assert bearer_token("Bearer abc") == "abc" and bearer_token("bearer  abc ") == "abc"
    for header in (None, "", "Bearer", "Basic abc", "Bearer " + "x" * 600):
        with pytest.raises(S.Unauthenticated):
            bearer_token(header)
    assert hash_in(token_hash("t"), [token_hash("u"), token_hash("t")])
    assert not hash_in(token_hash("t"), [])


def test_config(tmp_path):
    with pytest.raises(ConfigError, match="non-loopback"):
        load_config({"MINISPHERE_DATA_DIR": str(tmp_path), "MINISPHERE_HOST": "0.0.0.0"})
    with pytest.raises(ConfigError):
        load_config({"MINISPHERE_DATA_DIR": str(tmp_path), "MINISPHERE_PORT": "http"})
    first = load_config({"MINISPHERE_DATA_DIR": str(tmp_path)})
    again = load_config({"MINISPHERE_DATA_DIR": str(tmp_path)})
    assert first.admin_token_source == "generated" and again.admin_token_source == "file"
    assert first.admin_token == again.admin_token
    assert (tmp_path / ".admin_token").stat().st_mode & 0o077 == 0
    remote = load_config({"MINISPHERE_DATA_DIR": str(tmp_path), "MINISPHERE_HOST": "0.0.0.0",
                          "MINISPHERE_ADMIN_TOKEN": "a-long-enough-admin-token"})
    assert remote.admin_token_source == "env"


def test_serve_refuses_non_loopback_without_admin_token(tmp_path, monkeypatch, capsys):
    import serve_app
    monkeypatch.setenv("MINISPHERE_HOST", "0.0.0.0")
    monkeypatch.setenv("MINISPHERE_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("MINISPHERE_ADMIN_TOKEN", raising=False)
    assert serve_app.main([]) == 2
    assert "non-loopback" in capsys.readouterr().err


@pytest.mark.parametrize("exc, status", [
    (S.MalformedRequest("x"), 400), (E.InvalidArgument("x"), 422), (E.SelfLink("x"), 422),
    (S.Unauthenticated("x"), 401), (S.Forbidden("x"), 403), (E.NotFound("x"), 404),
    (E.KindGateViolation("x"), 409), (S.WorkspaceExists("x"), 409),
    (E.ContentTooLarge("x"), 413), (S.RequestTooLarge("x"), 413),
    (S.WorkspaceUnavailable("x"), 503), (E.SchemaTooNew("x"), 503),
    (ImportError("no module"), 503)])
def test_error_statuses(exc, status):
    code, body = error_response(exc)
    assert code == status and set(body["error"]) == {"code", "message"}


def test_storage_errors_are_unavailable():
    from minisphere import db
    code, body = error_response(db.OperationalError("database or disk is full"))
    assert code == 503 and body["error"]["code"] == "unavailable"


def test_unknown_errors_are_structured_and_hidden():
    code, body = error_response(ZeroDivisionError("secret detail"))
    assert code == 500 and body["error"]["code"] == "internal"
    assert "secret" not in body["error"]["message"]

    class NewEngineError(E.MiniSphereError):
        code = "new"
    assert status_for(NewEngineError("x")) == 400


def test_read_follow_ups_go_to_the_writer(tmp_path):
    ws = Workspace(tmp_path / "w.db", synchronous="NORMAL")
    writer = GroupCommitWriter(ws)
    handed = []

    def follow_up(method, body):
        handed.append(method)
        writer.submit(method, body, lambda *_: None)
    pool = ReadPool(tmp_path / "w.db", on_follow_up=follow_up)
    entry_id = ws.capture("sqlite is an embedded database")["id"]
    result, _ = pool.read("recall", {"query": "embedded database"})
    assert [item["id"] for item in result["items"]] == [entry_id]
    writer.close()        # drains the queued follow-up
    assert handed == ["noteRecalled"]
    assert ws.get_entry(entry_id)["recallCount"] == 1
    pool.close()
    ws.close()
