"""The operator scenario's last two steps (operator_scenario.py), each a function of the running
`Scenario`: a worker killed outright during concurrent keyed writes (every acknowledged write
served again from the other worker, none doubled; with async replication only those answered
within its window before the kill may be lost), and `serve deploy` of a changed config while a
client keeps writing (no acknowledged write lost or doubled, the same directory and scheduler).
"""

from __future__ import annotations

import copy
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

# this file's folder: the scenario runs as a script
from operator_cluster import HTTP_TIMEOUT_S, dump_config, kill_netns_processes

CONCURRENT_WRITES = 500  # keyed writes at once on the worker about to be killed
CONCURRENT_WRITERS = 32
# async replication's loss window: Litestream ships a file's new transactions every second; the
# rest is margin for a busy shared machine (a write answered just before a sync began)
ASYNC_LOSS_WINDOW_S = 3.0
RECOVERY_TIMEOUT_S = 120.0
REDEPLOY_TIMEOUT_S = 150.0
REDEPLOY_WRITE_PAUSE_S = 0.05  # between the writes kept going during the redeploy


# ---- a worker leaves ------------------------------------------------------------------------
def concurrent_writes(scenario, workspaces: dict, targets: list[str]) -> dict[str, list[str]]:
    """CONCURRENT_WRITES keyed captures at once over `targets`; the acknowledged ids of each
    (a 503 is sent again with its key, so each write is applied at most once)."""
    import httpx

    acknowledged: dict[str, list[str]] = {w: [] for w in targets}
    lock = threading.Lock()

    def one(n: int) -> None:
        workspace_id = targets[n % len(targets)]
        with httpx.Client(base_url=scenario.url, timeout=HTTP_TIMEOUT_S) as client:
            answer = scenario.call(
                client,
                workspace_id,
                workspaces[workspace_id]["token"],
                "capture",
                {"content": f"concurrent write {n} {uuid.uuid4().hex}"},
                key=uuid.uuid4().hex,
                deadline=time.monotonic() + RECOVERY_TIMEOUT_S,
            )
        if answer.status_code == 200:
            with lock:
                acknowledged[workspace_id].append(answer.json()["id"])
                scenario.acknowledged_at[answer.json()["id"]] = time.monotonic()

    with ThreadPoolExecutor(CONCURRENT_WRITERS) as pool:
        list(pool.map(one, range(CONCURRENT_WRITES)))
    return acknowledged


def kill_worker(scenario, http, workspaces: dict, placed: dict) -> None:
    """Concurrent keyed writes on the worker holding the most workspaces, then SIGKILL to
    every process in its namespace (raylet, Litestream, actors: no `ray stop`, nothing
    flushed on the way out): with `MINISPHERE_REPLICATION=sync` every acknowledged write
    is served from the other worker, restored from the replica, none doubled."""
    per_worker = {
        n.name: [w for w, where in placed.items() if where == n.name] for n in scenario.nodes[1:]
    }
    victim_name = max(per_worker, key=lambda name: len(per_worker[name]))
    victim = next(n for n in scenario.nodes if n.name == victim_name)
    moved = per_worker[victim_name]
    scenario.findings["stopped"] = victim_name
    if not scenario.check("the killed worker holds workspaces", bool(moved), per_worker):
        return
    with scenario.timed("concurrent writes"):
        late = concurrent_writes(scenario, workspaces, moved)
    for workspace_id, ids in late.items():
        workspaces[workspace_id]["late"].extend(ids)
    acknowledged = sum(len(ids) for ids in late.values())
    scenario.check(
        "the concurrent writes were acknowledged",
        acknowledged == CONCURRENT_WRITES,
        acknowledged,
    )
    # a copy of a moved workspace on a surviving worker before the kill: none expected
    scenario.copies_before_kill = {
        n.name: {w for w in moved if (n.folder / "data" / "workspaces" / w).exists()}
        for n in scenario.nodes[1:]
        if n.name != victim_name
    }
    with scenario.timed("kill -9"):
        killed = kill_netns_processes(victim.netns)
        scenario.killed_at = time.monotonic()
        victim.stopped = True
    scenario.findings["killed"] = {"worker": victim_name, "processes": killed}
    served_again(scenario, http, workspaces, placed, moved, victim_name)


def served_again(
    scenario, http, workspaces: dict, placed: dict, moved: list[str], victim_name: str
) -> None:
    """Every workspace answers again; the moved ones from the replica, every acknowledged
    write present once; and they take writes again."""
    deadline = time.monotonic() + RECOVERY_TIMEOUT_S
    started = time.monotonic()
    report = {}
    for workspace_id, ws in workspaces.items():
        answer = scenario.call(http, workspace_id, ws["token"], "getCount", {}, deadline=deadline)
        if answer.status_code != 200:
            raise RuntimeError(
                f"{workspace_id} after the kill: {answer.status_code} {answer.text[:300]}"
            )
        report[workspace_id] = {"count": answer.json()["count"]}
    scenario.findings["timings"]["served again after the kill"] = round(
        time.monotonic() - started, 1
    )
    after = scenario.placement(http, workspaces)
    for workspace_id, ws in workspaces.items():
        record = http.get(f"/v1/workspaces/{workspace_id}", headers=scenario.admin).json()
        activation = (record.get("durability") or {}).get("activation") or {}
        report[workspace_id].update(
            before=placed[workspace_id],
            after=after[workspace_id],
            source=activation.get("source"),
            snapshotted=scenario.present(http, workspace_id, ws["token"], ws["ids"], deadline),
            late=scenario.present(http, workspace_id, ws["token"], ws["late"], deadline),
            acknowledged=len(ws["ids"]) + len(ws["late"]),
        )
    scenario.findings["moved"] = {w: report[w] for w in moved}
    scenario.findings["writesChecked"] = sum(r["acknowledged"] for r in report.values())
    scenario.check(
        "moved workspaces now on the other worker",
        all(report[w]["after"] not in (victim_name, "?") for w in moved),
        {w: report[w]["after"] for w in moved},
    )
    scenario.check(
        "moved workspaces restored from their replicas",
        all(from_the_replica(scenario, w, report[w]) for w in moved),
        {w: (report[w]["source"], report[w]["after"]) for w in moved},
    )
    loss_checks(scenario, report)
    for workspace_id in moved:  # and they take writes again
        ws = workspaces[workspace_id]
        answer = scenario.call(
            http,
            workspace_id,
            ws["token"],
            "capture",
            {"content": f"{workspace_id} after the move {uuid.uuid4().hex}"},
            key=uuid.uuid4().hex,
            deadline=deadline,
        )
        ws["ids"].append(answer.json()["id"])
    scenario.check("moved workspaces take writes again", True)


def from_the_replica(scenario, workspace_id: str, moved: dict) -> bool:
    """Its copy on the new worker came from the replica: the activation says so, or says
    `local` where that worker held no copy before the kill (a wake that failed after its
    restore, on a loaded node, is retried, and the retry keeps the copy restored)."""
    if moved["source"] == "replica":
        return True
    held_before = scenario.copies_before_kill.get(moved["after"], {workspace_id})
    return moved["source"] == "local" and workspace_id not in held_before


def loss_checks(scenario, report: dict) -> None:
    """sync: every acknowledged write is there. async: only writes answered within the
    documented window before the kill may be missing. Either way none is there twice."""
    present = {w: r["snapshotted"] + r["late"] for w, r in report.items()}
    missing = [entry for _, entry, *_ in scenario.findings.get("missing", [])]
    ages = [
        round(scenario.killed_at - scenario.acknowledged_at[entry], 2)
        if entry in scenario.acknowledged_at and scenario.killed_at
        else None
        for entry in missing
    ]
    scenario.findings["loss"] = {
        "mode": scenario.replication,
        "lost": len(missing),
        "acknowledgedSecondsBeforeKill": sorted(ages, key=str)[:20],
    }
    if scenario.replication == "sync":
        scenario.check(
            "no acknowledged write lost",
            all(present[w] == r["acknowledged"] for w, r in report.items()),
            {w: (present[w], r["acknowledged"]) for w, r in report.items()},
        )
    else:
        scenario.check(
            f"async: only writes answered in the last {ASYNC_LOSS_WINDOW_S} s before the kill lost",
            all(age is not None and age <= ASYNC_LOSS_WINDOW_S for age in ages),
            ages,
        )
    scenario.check(
        "no acknowledged write applied twice",
        all(r["count"] == present[w] for w, r in report.items()),
        {w: (r["count"], present[w]) for w, r in report.items()},
    )


# ---- redeploy -----------------------------------------------------------------------------
def changed_config(scenario, base_config: dict):
    """The deployed config with two replicas at least, and a changed env: new replicas."""
    changed = copy.deepcopy(base_config)
    deployment = changed["applications"][0]["deployments"][0]
    deployment["autoscaling_config"]["min_replicas"] = 2
    scenario.config_env(changed)["MINISPHERE_MIN_REPLICAS"] = "2"
    path = scenario.work / "serve_config.changed.yaml"
    dump_config(changed, path)
    return path


def write_until_stopped(scenario, workspaces: dict, acknowledged: dict, errors: list, stop) -> None:
    """Keyed captures round the workspaces in `acknowledged` until `stop` is set; each write's
    id lands in `acknowledged`, each refusal or timeout in `errors`."""
    import httpx

    with httpx.Client(base_url=scenario.url, timeout=HTTP_TIMEOUT_S) as client:
        n = 0
        while not stop.is_set():
            for workspace_id in acknowledged:
                n += 1
                try:
                    answer = scenario.call(
                        client,
                        workspace_id,
                        workspaces[workspace_id]["token"],
                        "capture",
                        {"content": f"redeploy write {n} {uuid.uuid4().hex}"},
                        key=uuid.uuid4().hex,
                        deadline=time.monotonic() + REDEPLOY_TIMEOUT_S,
                    )
                except TimeoutError as exc:
                    errors.append(str(exc))
                    continue
                if answer.status_code == 200:
                    acknowledged[workspace_id].append(answer.json()["id"])
                else:
                    errors.append(f"{answer.status_code} {answer.text[:200]}")
            time.sleep(REDEPLOY_WRITE_PAUSE_S)


def redeploy(scenario, http, workspaces: dict, base_config: dict) -> None:
    path = changed_config(scenario, base_config)
    before = scenario.singletons()
    acknowledged: dict[str, list[str]] = {w: [] for w in list(workspaces)[:2]}

    def count(workspace_id: str) -> int:
        token = workspaces[workspace_id]["token"]
        return scenario.call(http, workspace_id, token, "getCount", {}).json()["count"]

    counts = {w: count(w) for w in acknowledged}
    stop = threading.Event()
    errors: list[str] = []
    writer = threading.Thread(
        target=write_until_stopped,
        args=(scenario, workspaces, acknowledged, errors, stop),
        daemon=True,
    )
    writer.start()
    with scenario.timed("redeploy"):
        scenario.serve_deploy(path)
        status = scenario.wait_running(REDEPLOY_TIMEOUT_S, replicas=2)
    time.sleep(2)  # writes keep going on the new replicas
    stop.set()
    writer.join(REDEPLOY_TIMEOUT_S)
    after = scenario.singletons()
    deadline = time.monotonic() + RECOVERY_TIMEOUT_S
    kept = {
        w: scenario.present(http, w, workspaces[w]["token"], ids, deadline)
        for w, ids in acknowledged.items()
    }
    final = {w: count(w) for w in acknowledged}
    written = sum(len(ids) for ids in acknowledged.values())
    scenario.findings["redeploy"] = {
        "change": "min_replicas 1 -> 2 (and MINISPHERE_MIN_REPLICAS)",
        **status,
        "writesDuring": written,
        "writesKept": sum(kept.values()),
        "errors": errors[:5],
        "directory": len(after["DirectoryActor"]),
        "scheduler": len(after["ScheduledTasksActor"]),
    }
    scenario.findings["writesChecked"] = scenario.findings.get("writesChecked", 0) + written
    scenario.check(
        "writes kept going during the redeploy",
        written > 0 and not errors,
        f"{written} acknowledged, {len(errors)} failed",
    )
    redeploy_kept_everything(scenario, acknowledged, kept, counts, final)
    scenario.check(
        "one directory and one scheduler, the same ones",
        before == after and all(len(v) == 1 for v in after.values()),
        {k: len(v) for k, v in after.items()},
    )
    scenario.check("the changed config is live", status["replicas"] >= 2, status)


def redeploy_kept_everything(scenario, acknowledged: dict, kept: dict, counts: dict, final: dict):
    scenario.check(
        "no acknowledged write lost in the redeploy",
        all(kept[w] == len(acknowledged[w]) for w in acknowledged),
        kept,
    )
    scenario.check(
        "no write applied twice",
        all(final[w] == counts[w] + len(acknowledged[w]) for w in acknowledged),
        {w: (counts[w], len(acknowledged[w]), final[w]) for w in acknowledged},
    )
