"""Maintenance runs without Ray: audit rows for success, failure and skips; the skip rule (not
due, dirty writes, never passed); resuming a large backlog; the runs listing."""

import pytest

from minisphere.engine import constants as C
from minisphere.errors import InvalidArgument, WorkspaceUnavailable
from minisphere.maintenance import ledger as S
from minisphere.maintenance import runs as M
from tests.maintenance.helpers import EngineGate, FailingGate, blueprint, control_plane


@pytest.fixture
def setup(tmp_path, clock):
    store, ledger = control_plane(tmp_path, ("ws-aaa", "ws-bbb"))
    gate = EngineGate(tmp_path, clock)
    yield store, ledger, gate
    gate.close()
    store.close()


def run(gate, ledger, clock, workspace_id="ws-aaa", limit=1000, trigger="cron", **kw):
    return M.run_workspace(gate, ledger, workspace_id, limit, trigger, clock=clock.now_ms, **kw)


def fill(gate, workspace_id, n, volatility="volatile"):
    gate.workspace(workspace_id).run_batch(
        [
            (
                "capture",
                {"content": f"{volatility} fact {i} of {workspace_id}", "volatility": volatility},
            )
            for i in range(n)
        ]
    )


def test_success_is_audited_with_counts(setup, clock):
    _, ledger, gate = setup
    fill(gate, "ws-aaa", 3)
    clock.advance(days=3)
    row = run(gate, ledger, clock)
    assert row["outcome"] == "ok" and row["trigger"] == "cron" and row["error"] is None
    assert (row["calls"], row["scanned"], row["marked"], row["cleared"], row["remaining"]) == (
        1,
        3,
        3,
        0,
        0,
    )
    assert row["startedAt"] <= row["finishedAt"]
    assert ledger.runs("ws-aaa") == [row]
    assert ledger.due_state("ws-aaa") == {
        "nextDueAt": None,
        "remaining": 0,
        "checkedAt": clock.now_ms(),
        "dirtySince": None,
    }


def test_failure_is_audited_and_nothing_is_recorded_as_due(setup, clock):
    _, ledger, _ = setup
    gate = FailingGate(WorkspaceUnavailable("workspace ws-aaa is restarting"))
    row = run(gate, ledger, clock)
    assert row["outcome"] == "error" and row["calls"] == 0
    assert row["error"] == "unavailable: workspace ws-aaa is restarting"
    assert ledger.due_state("ws-aaa") is None
    assert run(gate, ledger, clock)["outcome"] == "error"  # not skipped: tried again
    assert gate.calls == 2


def test_an_unexpected_exception_is_an_error_row_too(setup, clock):
    _, ledger, _ = setup
    row = run(FailingGate(RuntimeError("boom")), ledger, clock)
    assert row["outcome"] == "error" and row["error"] == "RuntimeError: boom"


def test_not_due_is_skipped_without_contacting_the_workspace(setup, clock):
    _, ledger, gate = setup
    fill(gate, "ws-aaa", 2)
    created = clock.now_ms()
    assert run(gate, ledger, clock)["marked"] == 0  # first run: no record, so it runs
    assert len(gate.calls) == 1
    clock.advance(days=1)
    skipped = run(gate, ledger, clock)
    assert skipped["outcome"] == "skipped" and len(gate.calls) == 1
    assert skipped["nextDueAt"] == created + C.STALE_AFTER_MS["volatile"]
    assert skipped["error"].startswith("not due until ")
    clock.advance(days=1)  # now due: runs again
    row = run(gate, ledger, clock)
    assert row["outcome"] == "ok" and row["marked"] == 2 and len(gate.calls) == 2
    nothing = run(gate, ledger, clock)  # all marked: nothing can turn
    assert nothing["outcome"] == "skipped" and "nothing can turn stale" in nothing["error"]


def test_manual_runs_are_never_skipped(setup, clock):
    _, ledger, gate = setup
    run(gate, ledger, clock)
    row = run(gate, ledger, clock, trigger="manual", max_calls=1)
    assert row["outcome"] == "ok" and row["trigger"] == "manual" and len(gate.calls) == 2


def test_a_write_after_the_pass_makes_it_due_after_the_shortest_threshold(setup, clock):
    _, ledger, gate = setup
    fill(gate, "ws-aaa", 1, "durable")
    run(gate, ledger, clock)  # next due in 365 days
    clock.advance(days=1)
    written_at = clock.now_ms()
    ledger.note_write("ws-aaa", written_at)  # what the workspace actor reports
    fill(gate, "ws-aaa", 1, "volatile")
    assert M.effective_due_at(ledger.due_state("ws-aaa")) == written_at + M.MIN_STALE_AFTER_MS
    clock.advance(days=1)
    assert run(gate, ledger, clock)["outcome"] == "skipped"
    clock.advance(days=1)
    row = run(gate, ledger, clock)
    assert row["outcome"] == "ok" and row["marked"] == 1
    assert ledger.due_state("ws-aaa")["dirtySince"] is None  # the pass saw the write


def test_record_pass_keeps_writes_it_may_not_have_seen(setup, clock):
    _, ledger, _ = setup
    t = clock.now_ms()
    ledger.record_pass("ws-aaa", t + 10 * C.DAY_MS, 0, t)
    ledger.note_write("ws-aaa", t + 1000)
    ledger.record_pass("ws-aaa", t + 20 * C.DAY_MS, 0, t + 1000 + M.CLOCK_SKEW_ALLOWANCE_MS)
    assert ledger.due_state("ws-aaa")["dirtySince"] == t + 1000  # within the allowance
    ledger.record_pass("ws-aaa", t + 20 * C.DAY_MS, 0, t + 2000 + M.CLOCK_SKEW_ALLOWANCE_MS)
    assert ledger.due_state("ws-aaa")["dirtySince"] is None
    ledger.note_write("ws-aaa", t)  # older than the pass
    assert ledger.due_state("ws-aaa")["dirtySince"] is None
    ledger.note_write("ws-aaa", t + 9000)
    ledger.note_write("ws-aaa", t + 8000)
    assert ledger.due_state("ws-aaa")["dirtySince"] == t + 8000  # the earliest one


def test_an_older_pass_answer_never_overwrites_a_newer_one(setup, clock):
    _, ledger, _ = setup
    t = clock.now_ms()
    ledger.record_pass("ws-aaa", t + 5, 0, t + 100)
    ledger.record_pass("ws-aaa", t + 999, 7, t + 50)
    assert ledger.due_state("ws-aaa") == {
        "nextDueAt": t + 5,
        "remaining": 0,
        "checkedAt": t + 100,
        "dirtySince": None,
    }


def test_writes_before_any_pass_are_not_recorded(setup, clock):
    _, ledger, _ = setup
    ledger.note_write("ws-aaa", clock.now_ms())
    assert ledger.due_state("ws-aaa") is None
    assert M.skip_reason(None, clock.now_ms()) is None


def test_due_state_of_a_deleted_workspace_goes_with_it(setup, clock):
    store, ledger, _ = setup
    ledger.record_pass("ws-aaa", None, 0, clock.now_ms())
    store.delete("ws-aaa")
    assert ledger.due_state("ws-aaa") is None
    ledger.record_pass("ws-aaa", None, 0, clock.now_ms())  # unknown workspace: ignored
    assert ledger.due_state("ws-aaa") is None


def test_a_backlog_is_worked_through_in_limit_sized_calls(setup, clock):
    _, ledger, gate = setup
    fill(gate, "ws-aaa", 35)
    clock.advance(days=3)
    row = run(gate, ledger, clock, limit=10)
    assert (row["calls"], row["marked"], row["remaining"]) == (4, 35, 0)
    assert gate.calls == [("ws-aaa", 10)] * 4


def test_a_run_stops_after_max_calls_and_the_next_tick_resumes(setup, clock):
    _, ledger, gate = setup
    fill(gate, "ws-aaa", 35)
    clock.advance(days=3)
    first = run(gate, ledger, clock, limit=10, max_calls=2)
    assert (first["calls"], first["marked"], first["remaining"]) == (2, 20, 15)
    second = run(gate, ledger, clock, limit=10, max_calls=2)  # remaining > 0: not skipped
    assert (second["outcome"], second["marked"], second["remaining"]) == ("ok", 15, 0)


def test_runs_listing_newest_first_filtered_and_limited(setup, clock):
    _, ledger, gate = setup
    for workspace_id in ("ws-aaa", "ws-bbb", "ws-aaa"):
        run(gate, ledger, clock, workspace_id, trigger="manual")
        clock.advance(seconds=1)
    everything = ledger.runs()
    assert [r["workspaceId"] for r in everything] == ["ws-aaa", "ws-bbb", "ws-aaa"]
    assert everything[0]["startedAt"] > everything[-1]["startedAt"]
    assert [r["workspaceId"] for r in ledger.runs("ws-bbb")] == ["ws-bbb"]
    assert len(ledger.runs("ws-aaa", limit=1)) == 1
    assert ledger.runs("ws-nope") == []
    for bad in (0, M.RUNS_MAX_LIMIT + 1, "5"):
        with pytest.raises(InvalidArgument):
            S.list_runs(ledger.conn, None, bad)


def test_runs_outlive_their_workspace(setup, clock):
    store, ledger, gate = setup
    run(gate, ledger, clock)
    store.delete("ws-aaa")
    assert len(ledger.runs("ws-aaa")) == 1


def test_audit_failure_is_logged_not_raised(setup, clock, caplog):
    _, _ledger, gate = setup

    class BrokenLedger:
        def due_state(self, _):
            return None

        def record_pass(self, *a):
            pass

        def record_run(self, _):
            raise OSError("disk full")

    row = run(gate, BrokenLedger(), clock)
    assert row["outcome"] == "ok" and "could not audit run" in caplog.text


def test_job_specs_from_directory_records(tmp_path):
    store, _ = control_plane(tmp_path, ("ws-aaa",), cron="*/15  * * * *", limit=50)
    store.create(blueprint(scheduled=False), [], "ws-off")
    store.create(blueprint(), [], "ws-del")
    store.set_state("ws-del", "deleting")
    specs, problems = M.checked_job_specs(S.all_workspaces(store))
    assert specs == {"ws-aaa": M.JobSpec("ws-aaa", "*/15 * * * *", 50)} and problems == {}
    store.close()


def test_record_validation():
    with pytest.raises(ValueError):
        M.RunRecord.begin("ws-aaa", "hourly", 0)
    with pytest.raises(ValueError):
        M.RunRecord.begin("ws-aaa", "cron", 0).finish("fine", 1)
    long = M.RunRecord.begin("ws-aaa", "cron", 0).finish("error", 1, "x" * 5000)
    assert len(long["error"]) == M.MAX_ERROR_CHARS


@pytest.mark.parametrize("volatility", sorted(C.STALE_AFTER_MS))
def test_an_entry_written_after_a_pass_is_marked_by_the_cron_run_at_its_due_time(
    setup, clock, volatility
):
    """The skip rule never holds a cron run back past the moment an entry written after the
    last pass turns stale, whatever its class: the shortest class's threshold is the bound."""
    _, ledger, gate = setup
    assert run(gate, ledger, clock)["outcome"] == "ok"  # empty: nothing can turn stale
    clock.advance(seconds=30)
    ledger.note_write("ws-aaa", clock.now_ms())  # what the workspace actor reports
    entry_id = gate.workspace("ws-aaa").capture(
        f"a {volatility} fact written after the pass", volatility=volatility
    )["id"]
    due_at = gate.workspace("ws-aaa").get_entry(entry_id)["staleDueAt"]
    shortest = min(C.STALE_AFTER_MS.values())
    clock.set(clock.now_ms() + shortest - 1)
    assert run(gate, ledger, clock)["outcome"] == "skipped"  # nothing can be due yet
    clock.set(due_at)
    row = run(gate, ledger, clock)
    assert (row["outcome"], row["marked"]) == ("ok", 1)
    assert gate.workspace("ws-aaa").get_entry(entry_id)["stale"] is True


def test_a_restore_forgets_the_due_state_so_the_next_run_is_not_skipped(setup, clock):
    _, ledger, gate = setup
    run(gate, ledger, clock)
    assert run(gate, ledger, clock)["outcome"] == "skipped"
    ledger.forget_due("ws-aaa")  # what the workspace actor reports on restore
    assert ledger.due_state("ws-aaa") is None
    assert run(gate, ledger, clock)["outcome"] == "ok"
