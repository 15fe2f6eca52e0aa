"""The multi-node scenario, run as its own process by test_multinode_failover.py (its own Ray
cluster: a head and two worker nodes on this machine, `ray.cluster_utils.Cluster`).

1. workspaces are placed on worker A and worker B (recorded placement -> node affinity);
2. each gets entries, then a snapshot, then a few more (unsnapshotted) entries;
3. worker B's disk is lost (its workspaces' folders deleted) and worker B is removed;
4. B's workspaces are refused by name (`workspace_data_missing`), never opened older: their
   newest acknowledged writes were only on B, and the directory's location record knows it;
5. an admin accepts the loss (the store's state becomes the newest); then every workspace
   answers again, B's from another node restored from their snapshots, with every snapshotted
   entry present; A's untouched; the scheduled-tasks actor still runs and can run a staleness
   pass on a moved workspace.

Prints one JSON line (the findings) on stdout; exit status 0 when every check held.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

WORKSPACES_PER_NODE = 2
ENTRIES_SNAPSHOTTED = 12
ENTRIES_AFTER_SNAPSHOT = 3
RECOVERY_TIMEOUT_S = 180.0
CALL_TIMEOUT_S = 60.0
NODE_CPUS = 1


def service_env(data_dir: Path) -> dict:
    return {
        "MINISPHERE_DATA_DIR": str(data_dir),
        "MINISPHERE_HOST": "127.0.0.1",
        "MINISPHERE_ADMIN_TOKEN": ADMIN_TOKEN,
        "MINISPHERE_RAY_NAMESPACE": "minisphere-multinode",
        "MINISPHERE_SYNCHRONOUS": "NORMAL",
        "MINISPHERE_SNAPSHOT_STORE": "local",
        "MINISPHERE_SNAPSHOT_EVERY_WRITES": "0",
        "MINISPHERE_SNAPSHOT_EVERY_S": "0",
        "MINISPHERE_HIBERNATE_IDLE_S": "0",
        "MINISPHERE_MAX_RESIDENT": "64",
        # without replication: the location record alone must refuse to open older state
        "MINISPHERE_REPLICATION": "off",
    }


ADMIN_TOKEN = "multinode-admin-token-0123456789"


def call(ray, directory, workspace_id: str, method: str, body: dict, deadline: float):
    """A call as the gateway makes it: re-activate through the directory while the actor is
    restarting or being restored, until `deadline`."""
    from ray.exceptions import GetTimeoutError, RayActorError

    from actors.workspace_call import WorkspaceCall
    from minisphere.control.auth import token_hash

    stale, last = False, None
    while time.monotonic() < deadline:
        try:
            handle = ray.get(directory.activate.remote(workspace_id, stale), timeout=CALL_TIMEOUT_S)
            reply = ray.get(
                handle.call.remote(WorkspaceCall(method, body, token_hash(ADMIN_TOKEN))),
                timeout=CALL_TIMEOUT_S,
            )
        except (RayActorError, GetTimeoutError) as exc:
            stale, last = True, exc
            time.sleep(0.5)
            continue
        if reply.ok:
            return reply.value, handle
        last = reply.error
        if getattr(last, "code", "") not in ("hibernating", "unavailable"):
            raise last
        stale = True
        time.sleep(0.5)
    raise TimeoutError(f"{workspace_id}: no answer to {method} before the deadline: {last!r}")


def gone_with_the_node(pids: list[int]) -> None:
    """A lost node's processes are gone with it. Here the worker processes of a removed node
    can outlive its raylet for a moment, holding their deleted files open: a call reaching one
    then was answered from a disk the scenario says is lost (seen when a workspace had its
    reader connection open before the node went)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for pid in pids:
        while Path(f"/proc/{pid}").exists() and "Z" not in process_state(pid):
            time.sleep(0.05)


def process_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return "Z"


def retrying(ray, make_call, deadline: float):
    """ray.get of a call to a detached actor that may be restarting after its node died."""
    from ray.exceptions import GetTimeoutError, RayActorError

    while True:
        try:
            return ray.get(make_call(), timeout=CALL_TIMEOUT_S)
        except (RayActorError, GetTimeoutError):
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.5)


def fill_one(ray, directory, workspace_id: str, deadline: float) -> tuple[list[str], dict]:
    """Entries written and snapshotted, then more after the snapshot; the snapshotted ids and
    the actor's ping."""
    from minisphere.control.auth import token_hash

    entries = []
    for n in range(ENTRIES_SNAPSHOTTED):
        body = {"content": f"{workspace_id} fact {n}: 東京 ünïcødé", "tags": ["mn"]}
        result, handle = call(ray, directory, workspace_id, "capture", body, deadline)
        entries.append(result["id"])
    ping = ray.get(handle.ping.remote())
    snap = ray.get(
        handle.serve.remote(workspace_id, "snapshot", "manual", token_hash(ADMIN_TOKEN)),
        timeout=CALL_TIMEOUT_S,
    )
    assert snap.ok, snap
    for n in range(ENTRIES_AFTER_SNAPSHOT):
        body = {"content": f"{workspace_id} late fact {n}"}
        call(ray, directory, workspace_id, "capture", body, deadline)
    return entries, ping


def fill_both_workers(ray, directory, nodes: dict, ids: dict, findings: dict):
    """WORKSPACES_PER_NODE workspaces placed on each worker and filled; what each one holds
    snapshotted, and the pid of its actor."""
    deadline = time.monotonic() + RECOVERY_TIMEOUT_S
    placed, kept, pids = {}, {}, {}
    for label, node in nodes.items():
        for index in range(WORKSPACES_PER_NODE):
            workspace_id = f"mn-{label.lower()}-{index}"
            ray.get(directory.create.remote(workspace_id, None, None))
            ray.get(directory.set_placement.remote(workspace_id, node.node_id))
            kept[workspace_id], ping = fill_one(ray, directory, workspace_id, deadline)
            placed[workspace_id], pids[workspace_id] = ids.get(ping["nodeId"], "head"), ping["pid"]
    findings["placedOn"] = placed
    spread = {placed[f"mn-a-{i}"] for i in range(WORKSPACES_PER_NODE)} == {"A"} and {
        placed[f"mn-b-{i}"] for i in range(WORKSPACES_PER_NODE)
    } == {"B"}
    findings["checks"]["spread over both workers"] = spread
    if not spread:
        raise AssertionError(
            "the directory did not start workspaces on their recorded "
            "nodes (placement / node affinity not honored)"
        )
    # the directory has heard every acknowledged write (the actors report positions)
    expected = ENTRIES_SNAPSHOTTED + ENTRIES_AFTER_SNAPSHOT
    while time.monotonic() < deadline and not all(
        ray.get(directory.get.remote(w))["location"]["position"] >= expected for w in kept
    ):
        time.sleep(0.2)
    return kept, pids


def refused_until_the_loss_is_accepted(ray, directory, lost: list[str], findings, deadline):
    refused = {}
    for workspace_id in lost:
        try:
            call(ray, directory, workspace_id, "getCount", {}, deadline)
            refused[workspace_id] = "opened"
        except Exception as exc:  # noqa: BLE001 - the refusal is what is checked
            refused[workspace_id] = getattr(exc, "code", exc.__class__.__name__)
        ray.get(directory.accept_stored_state.remote(workspace_id))
    findings["refusedBeforeAcceptingTheLoss"] = refused
    findings["checks"]["B's workspaces refused by name, not opened older"] = all(
        code == "workspace_data_missing" for code in refused.values()
    )


def recovered_everywhere(ray, directory, kept: dict, ids: dict, findings: dict, deadline):
    recovered = {}
    for workspace_id, entries in kept.items():
        count, handle = call(ray, directory, workspace_id, "getCount", {}, deadline)
        missing = [
            e
            for e in entries
            if not call(ray, directory, workspace_id, "getEntry", {"id": e}, deadline)[0].get("id")
        ]
        info = ray.get(handle.durability.remote(), timeout=CALL_TIMEOUT_S).value
        recovered[workspace_id] = {
            "node": ids.get(info["nodeId"], "head"),
            "count": count["count"],
            "missing": len(missing),
            "source": (info.get("activation") or {}).get("source"),
        }
    findings["recovered"] = recovered
    on_b = [w for w in kept if w.startswith("mn-b-")]
    checks = findings["checks"]
    checks["nothing snapshotted lost"] = all(r["missing"] == 0 for r in recovered.values())
    checks["B's workspaces left B"] = all(recovered[w]["node"] != "B" for w in on_b)
    checks["B's workspaces restored from snapshots"] = all(
        recovered[w]["source"] == "snapshot" for w in on_b
    )
    checks["A's workspaces kept everything"] = all(
        recovered[w]["count"] == ENTRIES_SNAPSHOTTED + ENTRIES_AFTER_SNAPSHOT
        for w in kept
        if w.startswith("mn-a-")
    )


def scheduler_survived(ray, scheduler, findings: dict, deadline: float) -> None:
    # the scheduler lived on B too: it is restarting elsewhere, so wait for it
    status = retrying(ray, lambda: scheduler.status.remote(), deadline)
    run = retrying(ray, lambda: scheduler.run_scheduled.remote("mn-b-0"), deadline)
    findings["scheduler"] = {
        "status": status,
        "run": {k: run.get(k) for k in ("status", "outcome", "trigger") if k in run},
    }
    findings["checks"]["scheduler keeps running"] = bool(status.get("running"))


def main() -> int:
    import ray
    from ray.cluster_utils import Cluster

    from actors.directory.actor import get_directory
    from actors.scheduler.actor import get_scheduled_tasks
    from minisphere.settings import load_settings

    data_dir = Path(sys.argv[1])
    config = load_settings(service_env(data_dir))
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": NODE_CPUS,
            "resources": {"head": 1},
            "include_dashboard": False,
        },
    )
    node_a = cluster.add_node(num_cpus=NODE_CPUS, resources={"node_a": 1})
    node_b = cluster.add_node(num_cpus=NODE_CPUS, resources={"node_b": 1})
    findings: dict = {"checks": {}}
    try:
        ray.init(
            address=cluster.address,
            namespace=config.namespace,
            logging_level="WARNING",
            log_to_driver=False,
        )
        ids = {node_a.node_id: "A", node_b.node_id: "B"}
        directory = get_directory(config)
        scheduler = get_scheduled_tasks(config)

        def where(actor) -> str:
            node_of = lambda _self: ray.get_runtime_context().get_node_id()
            return ray.get(actor.__ray_call__.remote(node_of), timeout=CALL_TIMEOUT_S)

        findings["directoryNode"] = ids.get(where(directory), "head")
        findings["schedulerNode"] = ids.get(where(scheduler), "head")
        nodes = {"A": node_a, "B": node_b}
        kept, pids = fill_both_workers(ray, directory, nodes, ids, findings)
        # worker B goes away with its disk: its workspace files are gone too
        on_b = [w for w in kept if w.startswith("mn-b-")]
        for workspace_id in on_b:
            shutil.rmtree(data_dir / "workspaces" / workspace_id)
        cluster.remove_node(node_b, allow_graceful=False)
        gone_with_the_node([pids[w] for w in on_b])
        findings["removed"] = "B"
        deadline = time.monotonic() + RECOVERY_TIMEOUT_S
        refused_until_the_loss_is_accepted(ray, directory, on_b, findings, deadline)
        recovered_everywhere(ray, directory, kept, ids, findings, deadline)
        scheduler_survived(ray, scheduler, findings, deadline)
        findings["ok"] = all(findings["checks"].values())
    except Exception as exc:  # noqa: BLE001 - reported, then a failing exit status
        findings["ok"] = False
        findings["error"] = f"{exc.__class__.__name__}: {exc}"
    finally:
        print(json.dumps(findings, default=str), flush=True)
        ray.shutdown()
        cluster.shutdown()
    return 0 if findings.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
