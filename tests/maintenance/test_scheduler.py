"""The APScheduler wiring without Ray: jobs rebuilt from the directory (a restart never
duplicates one), misfires coalesced within the documented grace and audited beyond it,
catch-up on start, and no overlapping runs for one workspace."""

import json
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from apscheduler.events import EVENT_JOB_MAX_INSTANCES

from minisphere.maintenance import runs as M
from minisphere.maintenance.scheduler import MaintenanceScheduler, latest_fire_within_grace
from tests.maintenance.helpers import CountingGate, blueprint, control_plane


def wait_for(predicate, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def made(tmp_path):
    schedulers, stores = [], []

    def make(workspaces=("ws-aaa",), gate=None, store_ledger=None, **bp):
        store, ledger = store_ledger or control_plane(tmp_path, workspaces, **bp)
        stores.append(store)
        ms = MaintenanceScheduler(gate or CountingGate(), ledger)
        schedulers.append(ms)
        return ms, store, ledger

    yield make
    for ms in schedulers:
        ms.shutdown()
    for store in stores:
        store.close()


def far_cron() -> str:
    """A daily cron 12 hours away: no real tick falls inside a test's few minutes, so the only
    run time is the one the test forces."""
    return f"0 {(datetime.now(UTC).hour + 12) % 24} * * *"


def ago(**delta):
    return datetime.now(UTC) - timedelta(**delta)


def test_a_tick_missed_longer_ago_than_the_grace_is_not_caught_up_on_start(made):
    now = datetime.now(UTC)
    tick = now - timedelta(seconds=M.MISFIRE_GRACE_S + 60)
    cron = f"{tick.minute} {tick.hour} * * *"
    ms, _, ledger = made(cron=cron)
    assert latest_fire_within_grace(M.JobSpec("ws-aaa", cron, 1), now) is None
    ms.start()
    [job] = ms.jobs()
    assert datetime.fromisoformat(job["nextRunTime"]) > now + timedelta(hours=23)  # tomorrow
    assert ms._gate.calls == [] and ledger.runs("ws-aaa") == []


def test_one_job_per_scheduled_workspace_and_restart_never_duplicates(made, tmp_path):
    ms, store, ledger = made(("ws-aaa", "ws-bbb"))
    store.create(blueprint(scheduled=False), [], "ws-off")
    ms.start(paused=True)
    assert sorted(j["id"] for j in ms.jobs()) == ["ws-aaa", "ws-bbb"]
    assert ms.sync() == {"jobs": 2, "added": [], "removed": [], "unusable": []}  # idempotent
    assert len(ms.jobs()) == 2
    ms.shutdown()
    # restart: a new scheduler rebuilt from the same directory holds the same jobs, once
    again, _, _ = made(store_ledger=(store, ledger))
    again.start(paused=True)
    again.start(paused=True)
    assert sorted(j["id"] for j in again.jobs()) == ["ws-aaa", "ws-bbb"]


def test_a_job_already_in_the_store_is_replaced_not_duplicated(made):
    ms, _, _ = made()
    ms.scheduler.start(paused=True)
    ms.scheduler.add_job(print, "interval", seconds=5, id="ws-aaa")  # left over
    ms.start(paused=True)
    jobs = ms.scheduler.get_jobs()
    assert [j.id for j in jobs if j.id == "ws-aaa"] == ["ws-aaa"]
    assert jobs[[j.id for j in jobs].index("ws-aaa")].func == ms.run_scheduled


def test_sync_follows_the_directory(made):
    ms, store, _ = made(("ws-aaa", "ws-bbb"))
    ms.start(paused=True)
    untouched = ms.scheduler.get_job("ws-aaa").next_run_time
    store.delete("ws-bbb")
    store.create(blueprint(cron="*/5 * * * *", limit=7), [], "ws-ccc")
    assert ms.sync() == {"jobs": 2, "added": ["ws-ccc"], "removed": ["ws-bbb"], "unusable": []}
    assert ms.scheduler.get_job("ws-aaa").next_run_time == untouched
    assert ms.scheduler.get_job("ws-ccc").args == ("ws-ccc", 7)


def test_missed_ticks_are_coalesced_into_one_run(made):
    ms, _, ledger = made(cron="* * * * *")
    ms.start(paused=True, catch_up=False)
    ms.scheduler.modify_job("ws-aaa", next_run_time=ago(minutes=4, seconds=30))  # 5 ticks missed
    ms.scheduler.resume()
    assert wait_for(lambda: ledger.runs("ws-aaa"))
    # the five missed ticks were consumed by that one run: the job's next run is a tick still
    # to come. A real tick of "* * * * *" may fall within the pause below, so only runs started
    # before that next tick count.
    next_tick_ms = ms.scheduler.get_job("ws-aaa").next_run_time.timestamp() * 1000
    assert next_tick_ms > time.time() * 1000 - 1000
    time.sleep(0.5)
    before_next = [r for r in ledger.runs("ws-aaa") if r["startedAt"] < next_tick_ms]
    assert [r["outcome"] for r in before_next] == ["ok"]


def test_a_late_run_within_the_grace_still_runs(made):
    ms, _, ledger = made(cron=far_cron())
    ms.start(paused=True, catch_up=False)
    ms.scheduler.modify_job("ws-aaa", next_run_time=ago(minutes=4))  # 240 s late < 300 s
    ms.scheduler.resume()
    assert wait_for(lambda: ledger.runs("ws-aaa"))
    assert ms._gate.calls == ["ws-aaa"] and ledger.runs("ws-aaa")[0]["outcome"] == "ok"


def test_apschedulers_default_grace_would_have_dropped_it(made):
    ms, _, ledger = made(cron=far_cron())
    ms.start(paused=True, catch_up=False)
    # the same 4-minute delay with APScheduler's default grace of 1 s
    ms.scheduler.modify_job("ws-aaa", misfire_grace_time=1, next_run_time=ago(minutes=4))
    ms.scheduler.resume()
    assert wait_for(lambda: ledger.runs("ws-aaa"))
    assert ms._gate.calls == []  # dropped ... but at least audited here
    assert ledger.runs("ws-aaa")[0]["outcome"] == "skipped"


def test_a_run_later_than_the_grace_is_audited_as_missed(made):
    ms, _, ledger = made(cron=far_cron())
    ms.start(paused=True, catch_up=False)
    ms.scheduler.modify_job("ws-aaa", next_run_time=ago(minutes=10))
    ms.scheduler.resume()
    assert wait_for(lambda: ledger.runs("ws-aaa"))
    row = ledger.runs("ws-aaa")[0]
    assert ms._gate.calls == []
    assert row["outcome"] == "skipped" and row["error"].startswith("missed: started 6")
    assert f"grace {M.MISFIRE_GRACE_S} s" in row["error"]


def test_catch_up_on_start_runs_a_tick_missed_while_down(made):
    now = datetime.now(UTC)
    tick = now - timedelta(minutes=2)
    cron = f"{tick.minute} {tick.hour} * * *"
    ms, _, ledger = made(cron=cron)
    assert latest_fire_within_grace(M.JobSpec("ws-aaa", cron, 1), now) == tick.replace(
        second=0, microsecond=0
    )
    ms.start()
    assert wait_for(lambda: ledger.runs("ws-aaa"))
    assert ms._gate.calls == ["ws-aaa"]
    # started again (another restart): that tick already ran, so no second run
    ms.shutdown()
    again, _, _ = made(store_ledger=(ms.ledger.control_plane, ms.ledger))
    again.start()
    time.sleep(0.5)
    assert again._gate.calls == [] and len(ledger.runs("ws-aaa")) == 1


def test_runs_for_one_workspace_never_overlap(made):
    release = threading.Event()
    gate = CountingGate(block=release)
    ms, _, ledger = made(gate=gate)
    refused = []
    ms.scheduler.add_listener(lambda e: refused.append(e.job_id), EVENT_JOB_MAX_INSTANCES)
    ms.start(paused=True, catch_up=False)
    ms.scheduler.modify_job("ws-aaa", next_run_time=datetime.now(UTC))
    ms.scheduler.resume()
    assert wait_for(lambda: gate.running == 1)
    ms.scheduler.modify_job("ws-aaa", next_run_time=datetime.now(UTC))
    ms.scheduler.wakeup()
    assert wait_for(lambda: refused == ["ws-aaa"])
    release.set()
    assert wait_for(lambda: len(ledger.runs("ws-aaa")) == 1)
    assert gate.most_running == 1 and gate.calls == ["ws-aaa"]


def store_raw_schedule(store, workspace_id: str, tasks) -> None:
    """Write a schedule into the control plane as an older build (one that checked less)
    could have stored it: straight into the record, past today's blueprint checks."""
    record = store.get(workspace_id)
    bp = dict(
        record["blueprint"], bindings=dict(record["blueprint"]["bindings"], scheduledTasks=tasks)
    )
    store.conn.execute(
        "UPDATE workspaces SET blueprint_json = ? WHERE id = ?", (json.dumps(bp), workspace_id)
    )


@pytest.mark.parametrize(
    "tasks, words",
    [
        ({"cron": "99 * * * *", "limit": 10}, "99"),
        ({"cron": "*/0 * * * *", "limit": 10}, "Increment"),
        ({"cron": "17 3 * * *", "limit": "lots"}, "limit"),
        ({"limit": 10}, "cron"),
        ("every night", "not an object"),
    ],
)
def test_an_unusable_stored_schedule_is_skipped_and_audited_and_others_still_run(
    made, tasks, words
):
    ms, store, ledger = made(("ws-aaa", "ws-bad", "ws-ccc"), cron="* * * * *")
    store_raw_schedule(store, "ws-bad", tasks)
    summary = ms.start(paused=True, catch_up=False)  # used to raise: actor never started
    assert sorted(j["id"] for j in ms.jobs()) == ["ws-aaa", "ws-ccc"]
    assert summary["unusable"] == ["ws-bad"] and summary["jobs"] == 2
    (row,) = ledger.runs("ws-bad")
    assert row["outcome"] == "error" and row["trigger"] == "cron" and row["calls"] == 0
    assert row["error"].startswith(M.UNUSABLE_SCHEDULE_PREFIX) and words in row["error"]
    # audited once, not on every refresh; the others keep running on their cron
    ms.sync()
    ms.sync()
    assert len(ledger.runs("ws-bad")) == 1
    ms.scheduler.modify_job("ws-aaa", next_run_time=ago(seconds=1))
    ms.scheduler.resume()
    assert wait_for(lambda: ledger.runs("ws-aaa"))
    assert "ws-bad" not in ms._gate.calls
    # once the record is fixed, the next refresh schedules it
    store_raw_schedule(store, "ws-bad", {"cron": "17 3 * * *", "limit": 10})
    assert ms.sync()["added"] == ["ws-bad"] and ms.scheduler.get_job("ws-bad") is not None


def test_a_schedule_that_turns_unusable_loses_its_job(made):
    ms, store, ledger = made(("ws-aaa",), cron="17 3 * * *")
    ms.start(paused=True)
    assert ms.scheduler.get_job("ws-aaa") is not None
    store_raw_schedule(store, "ws-aaa", {"cron": "61 3 * * *", "limit": 10})
    assert ms.sync() == {"jobs": 0, "added": [], "removed": ["ws-aaa"], "unusable": ["ws-aaa"]}
    assert ms.scheduler.get_job("ws-aaa") is None
    assert [r["outcome"] for r in ledger.runs("ws-aaa")] == ["error"]
