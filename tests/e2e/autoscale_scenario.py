"""Workspaces drive the cluster's size: Ray's own autoscaler (its fake multi-node provider, which
starts real raylets on this machine as "nodes") adds a worker when more workspaces wake than the
workers' slots hold, and removes it once they hibernate.

    sudo python tests/e2e/autoscale_scenario.py [--json]

The cluster runs in a network namespace with only its loopback (nothing listens on the host's
interfaces) and its own PID and mount namespaces (its own /tmp/ray; `ray stop --force`, which
the fake provider's helpers run, sees only this cluster's processes). Steps:

1. a head (no CPUs, no slots) and one worker of WORKER_SLOTS workspace slots, the autoscaler
   allowed one more worker of the same type;
2. WORKSPACES (> WORKER_SLOTS) workspaces wake at once through the directory: those beyond the
   first worker's slots are pending actors, which the autoscaler sees as demand and answers
   with a second worker, where they are placed;
3. each workspace gets writes; then they hibernate (idle): the directory gathers the warm
   spares on one worker, the other has nothing left to hold and the autoscaler removes it;
4. every workspace wakes again: every acknowledged write is there.

The last line of stdout is the findings as JSON with --json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

NETNS = "msas-auto"
WORKER_TYPE = "workspace-worker"
WORKER_SLOTS = 3  # minisphere_workspace_slots of one worker
WORKSPACES = 5  # more than one worker's slots, fewer than two workers'
SPARE_ACTORS = 2  # warm spares (each holds a slot while it waits)
WRITES_PER_WORKSPACE = 3
WORKER_CPUS = 1
IDLE_TIMEOUT_MIN = 0.1  # the autoscaler removes a worker idle this long (6 s)
HIBERNATE_IDLE_S = 2.0  # workspaces hibernate after this long without a call
UP_TIMEOUT_S = 120.0
DOWN_TIMEOUT_S = 120.0
CALL_TIMEOUT_S = 150.0
POLL_S = 0.5
STALL_REPORT_S = 30.0  # a wake slower than this is reported (actors, nodes, demand)
ADMIN_TOKEN = "autoscale-scenario-admin-token-0123456789"
OBJECT_STORE_BYTES = 100 * 1024 * 1024


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def autoscaling_config() -> dict:
    """The fake multi-node provider's cluster config: one worker type, at most two of them."""
    return {
        "cluster_name": "minisphere-autoscale",
        "max_workers": 2,
        "provider": {
            "type": "fake_multinode",
            "use_node_id_as_ip": True,
            "disable_node_updaters": True,
            "disable_launch_config_check": True,
            "gcs_address": "127.0.0.1:6379",
        },
        "available_node_types": {
            "ray.head.default": {"resources": {"CPU": 0}, "node_config": {}, "max_workers": 0},
            WORKER_TYPE: {
                "resources": {
                    "CPU": WORKER_CPUS,
                    "minisphere_workspace_slots": WORKER_SLOTS,
                    "object_store_memory": OBJECT_STORE_BYTES,
                },
                "node_config": {},
                "min_workers": 1,
                "max_workers": 2,
            },
        },
        "head_node_type": "ray.head.default",
        "auth": {},
        "upscaling_speed": 1.0,
        "idle_timeout_minutes": IDLE_TIMEOUT_MIN,
        "docker": {},
        "initialization_commands": [],
        "setup_commands": [],
        "head_setup_commands": [],
        "worker_setup_commands": [],
        "head_start_ray_commands": [],
        "worker_start_ray_commands": [],
        "file_mounts": {},
        "cluster_synced_files": [],
        "file_mounts_sync_continuously": False,
        "rsync_exclude": [],
        "rsync_filter": [],
    }


def workers(ray) -> list[dict]:
    return [
        n
        for n in ray.nodes()
        if n.get("Alive") and "minisphere_workspace_slots" in (n.get("Resources") or {})
    ]


def slot_demand() -> int:
    """Workspace slots asked for and not granted, as the GCS reports them to the autoscaler."""
    from ray.autoscaler.v2.sdk import get_cluster_status

    try:
        status = get_cluster_status("127.0.0.1:6379")
    except Exception:  # noqa: BLE001 - not ready yet
        return 0
    return int(
        sum(
            shape.count * shape.bundle.get("minisphere_workspace_slots", 0)
            for demand in status.resource_demands.ray_task_actor_demand
            for shape in demand.bundles_by_count
        )
    )


def activate_all(ray, directory, ids: list[str], findings: dict) -> list:
    """Every workspace's actor handle, woken all at once. A wake refused `overloaded` is sent
    again after its Retry-After, as the clients do: a refusal is an answer, and a wake that
    waits for a node the autoscaler adds must never be one. A stall is reported."""
    from minisphere.errors import Overloaded

    handles: dict = {}
    waiting = list(ids)
    deadline = time.monotonic() + CALL_TIMEOUT_S
    while waiting and time.monotonic() < deadline:
        refs = {w: directory.activate.remote(w) for w in waiting}
        ready, _ = ray.wait(list(refs.values()), num_returns=len(refs), timeout=STALL_REPORT_S)
        if len(ready) < len(refs):
            findings["stall"] = actor_report(ray)
            with contextlib.suppress(Exception):
                findings["stall"]["spares"] = ray.get(directory.spares.remote(), timeout=10)
        waiting, pause = [], 0.0
        for workspace_id, ref in refs.items():
            try:
                handles[workspace_id] = ray.get(ref, timeout=CALL_TIMEOUT_S)
            except Overloaded as refused:
                findings["wakes refused"] = findings.get("wakes refused", 0) + 1
                waiting.append(workspace_id)
                pause = max(pause, refused.retry_after_s)
        time.sleep(pause)
    return [handles[w] for w in ids]


def served_call(ray, directory, workspace_id: str, findings: dict, method: str, body, caller):
    """One call through the actor's gate, as the ingress sends it: a handle woken earlier may
    since have made room for another wake on its node and now serve another workspace (its
    process recycled), which the gate refuses as `hibernating`; the workspace is woken again."""
    from actors.workspace_call import WorkspaceCall
    from minisphere.errors import WorkspaceHibernating

    for _ in range(10):
        handle = activate_all(ray, directory, [workspace_id], findings)[0]
        reply = ray.get(
            handle.serve.remote(workspace_id, "call", WorkspaceCall(method, body, caller)),
            timeout=CALL_TIMEOUT_S,
        )
        if reply.ok or not isinstance(reply.error, WorkspaceHibernating):
            return reply
    return reply


def actor_report(ray) -> dict:
    """Where the workspace actors are and in what state, and the nodes (for a failure report)."""
    actors = [
        {
            "name": a.get("Name"),
            "state": a.get("State"),
            "node": (a.get("Address") or {}).get("NodeID", "")[-8:],
            "restarts": a.get("NumRestarts"),
            "death": str(a.get("DeathCause", ""))[:200],
        }
        for a in ray._private.state.actors().values()
        if (a.get("ActorClassName") or "").endswith("WorkspaceActor") and a.get("State") != "DEAD"
    ]
    nodes = [(n["NodeID"][-8:], n["Alive"], n.get("Resources")) for n in ray.nodes()]
    return {"actors": actors, "nodes": nodes, "slotDemand": slot_demand()}


def wait_for(what: str, predicate, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(POLL_S)
    raise TimeoutError(f"{what}: not within {timeout:.0f} s")


def start_head(work: Path) -> dict[str, str]:
    """`ray start --head` with the fake autoscaler's config; the environment it ran with."""
    config_file = work / "autoscaling.json"
    config_file.write_text(json.dumps(autoscaling_config()))
    env = {
        **os.environ,
        "RAY_FAKE_CLUSTER": "1",
        "AUTOSCALER_UPDATE_INTERVAL_S": "1",
        "RAY_AUTH_MODE": "disabled",
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    subprocess.run(
        [
            "ray",
            "start",
            "--head",
            "--node-ip-address=127.0.0.1",
            "--port=6379",
            "--num-cpus=0",
            f"--object-store-memory={OBJECT_STORE_BYTES}",
            f"--autoscaling-config={config_file}",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    os.environ.update({"RAY_AUTH_MODE": "disabled"})
    return env


def scenario_settings(work: Path):
    from minisphere.settings import load_settings

    return load_settings(
        {
            "MINISPHERE_DATA_DIR": str(work / "data"),
            "MINISPHERE_ADMIN_TOKEN": ADMIN_TOKEN,
            "MINISPHERE_RAY_NAMESPACE": "minisphere-autoscale",
            "MINISPHERE_SYNCHRONOUS": "NORMAL",
            "MINISPHERE_SNAPSHOT_STORE": "local",
            "MINISPHERE_SNAPSHOT_EVERY_WRITES": "0",
            "MINISPHERE_SNAPSHOT_EVERY_S": "0",
            "MINISPHERE_HIBERNATE_IDLE_S": "0",
            "MINISPHERE_MAX_RESIDENT": "64",
            # warm spares hold slots too: they must neither take the slots that waiting wakes
            # need nor keep an otherwise idle worker from being removed
            "MINISPHERE_SPARE_ACTORS": str(SPARE_ACTORS),
            "MINISPHERE_WORKSPACE_SLOTS": "on",
        }
    )


class Run:
    """What the scenario's phases share: Ray, the directory, the workspaces, the findings."""

    def __init__(self, ray, directory, first_id: str, findings: dict, t0: float):
        from minisphere.control.auth import token_hash

        self.ray, self.directory, self.first_id = ray, directory, first_id
        self.findings, self.t0 = findings, t0
        self.check: dict = findings["checks"]
        self.admin = token_hash(ADMIN_TOKEN)
        self.ids = [f"as-{i}" for i in range(WORKSPACES)]

    def since(self) -> float:
        return round(time.monotonic() - self.t0, 1)

    def timing(self, name: str, value: float | None) -> None:
        self.findings["timings"][name] = value

    def mark(self, name: str) -> None:
        """The time since the start, as the timing `name`."""
        self.timing(name, self.since())

    def remote(self, method, *args, **kw):
        return self.ray.get(method.remote(*args, **kw), timeout=CALL_TIMEOUT_S)


def wake_burst(run: Run) -> None:
    """Every wake at once: those beyond the first worker's slots wait for a new node."""
    demand: dict = {}

    def watch():
        while "launched" not in demand:
            if "seen" not in demand and slot_demand():
                demand["seen"] = run.since()
            if len(workers(run.ray)) > 1:
                demand["launched"] = run.since()
            time.sleep(POLL_S / 2)

    watcher = threading.Thread(target=watch, daemon=True)
    wake_started = run.since()
    watcher.start()
    handles = activate_all(run.ray, run.directory, run.ids, run.findings)
    run.mark("all woken")
    demand.setdefault("launched", None)
    watcher.join(5)
    run.timing("wake burst started", wake_started)
    run.timing("slot demand seen", demand.get("seen"))
    run.timing("second worker alive", demand["launched"])
    placed = {w: run.remote(h.ping)["nodeId"] for w, h in zip(run.ids, handles, strict=True)}
    per_node: dict[str, int] = {}
    for node in placed.values():
        per_node[node] = per_node.get(node, 0) + 1
    first = run.first_id
    run.findings["placed"] = {w: ("first" if n == first else n[:12]) for w, n in placed.items()}
    run.check["a second worker was launched for the wakes"] = demand["launched"] is not None
    run.check["no worker holds more workspaces than its slots"] = (
        max(per_node.values()) <= WORKER_SLOTS
    )
    run.check["the workspaces beyond the first worker's slots went to the new one"] = (
        sum(1 for n in placed.values() if n != first) >= WORKSPACES - WORKER_SLOTS
    )


def write_everywhere(run: Run) -> dict[str, list[str]]:
    written: dict[str, list[str]] = {}
    for workspace_id in run.ids:
        for n in range(WRITES_PER_WORKSPACE):
            body = {"content": f"{workspace_id} fact {n} {time.time_ns()}"}
            reply = served_call(
                run.ray, run.directory, workspace_id, run.findings, "capture", body, run.admin
            )
            assert reply.ok, reply
            written.setdefault(workspace_id, []).append(reply.value["id"])
    return written


def idle_down(run: Run) -> None:
    """Idle: the workspaces hibernate, the second worker holds nothing and is removed."""
    hibernate_started = run.since()
    run.remote(run.directory.set_residency, idle_s=HIBERNATE_IDLE_S)
    wait_for("hibernation", lambda: not run.remote(run.directory.resident), DOWN_TIMEOUT_S)
    run.mark("all hibernated")
    run.remote(run.directory.set_residency, idle_s=0)
    wait_for("the idle worker removed", lambda: len(workers(run.ray)) == 1, DOWN_TIMEOUT_S)
    run.mark("back to one worker")
    # either worker may go: when it is the first, the re-wake below meets workspaces whose
    # recorded node is the surviving, already full one
    left = workers(run.ray)
    run.findings["removed"] = "first" if left[0]["NodeID"] != run.first_id else "second"
    run.timing("hibernation started", hibernate_started)
    run.check["the idle worker was removed"] = len(workers(run.ray)) == 1


def wake_again_and_read(run: Run, written: dict[str, list[str]]) -> None:
    """Nothing acknowledged is lost: everything wakes again (the cluster grows again)."""
    activate_all(run.ray, run.directory, run.ids, run.findings)
    kept = 0
    for workspace_id in run.ids:
        for entry_id in written[workspace_id]:
            reply = served_call(
                run.ray,
                run.directory,
                workspace_id,
                run.findings,
                "getEntry",
                {"id": entry_id},
                run.admin,
            )
            kept += bool(reply.ok and reply.value.get("id") == entry_id)
    run.findings["writes"] = {"acknowledged": sum(map(len, written.values())), "kept": kept}
    run.mark("woken again")
    run.findings["spares"] = run.remote(run.directory.spares)
    run.check["no acknowledged write lost"] = kept == run.findings["writes"]["acknowledged"]


def inside(work: Path) -> dict:
    """The scenario proper (already inside its namespaces)."""
    import ray

    from actors.directory.actor import get_directory

    findings: dict = {
        "checks": {},
        "timings": {},
        "workerSlots": WORKER_SLOTS,
        "workspaces": WORKSPACES,
    }
    t0 = time.monotonic()
    env = start_head(work)
    try:
        ray.init(
            address="127.0.0.1:6379",
            namespace="minisphere-autoscale",
            logging_level="WARNING",
            log_to_driver=False,
        )
        first = wait_for("the first worker", lambda: workers(ray), UP_TIMEOUT_S)
        findings["timings"]["first worker up"] = round(time.monotonic() - t0, 1)
        directory = get_directory(scenario_settings(work))
        run = Run(ray, directory, first[0]["NodeID"], findings, t0)
        for workspace_id in run.ids:
            run.remote(directory.create, workspace_id, None, None)
        wake_burst(run)
        written = write_everywhere(run)
        idle_down(run)
        wake_again_and_read(run, written)
        findings["ok"] = all(run.check.values())
    except Exception as exc:  # noqa: BLE001 - reported as findings
        findings["ok"] = False
        findings["error"] = f"{exc.__class__.__name__}: {exc}"[-1500:]
        with contextlib.suppress(Exception):
            findings["actors"] = actor_report(ray)
        with contextlib.suppress(OSError):  # what the autoscaler decided, for the report
            monitor = Path("/tmp/ray/session_latest/logs/monitor.log").read_text()
            findings["autoscalerLog"] = monitor[-4000:]
    finally:
        with contextlib.suppress(Exception):
            ray.shutdown()
        subprocess.run(["ray", "stop", "--force"], capture_output=True, timeout=60, env=env)
        findings["timings"]["total"] = round(time.monotonic() - t0, 1)
    return findings


def outside(args) -> int:
    """Make the namespaces and run this file again inside them; always remove them."""
    work = Path(tempfile.mkdtemp(prefix="msas-"))
    (work / "ray").mkdir()
    subprocess.run(["ip", "netns", "del", NETNS], capture_output=True)
    subprocess.run(["ip", "netns", "add", NETNS], check=True)
    findings = {"ok": False, "error": "the scenario printed no findings"}
    try:
        subprocess.run(["ip", "netns", "exec", NETNS, "ip", "link", "set", "lo", "up"], check=True)
        script = (
            f"set -e; mkdir -p /tmp/ray; mount --bind {work / 'ray'} /tmp/ray; cd {ROOT}; "
            f"exec {sys.executable} {Path(__file__).resolve()} --inside {work}"
        )
        done = subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                NETNS,
                "unshare",
                "--mount",
                "--pid",
                "--fork",
                "--mount-proc",
                "--propagation",
                "private",
                "sh",
                "-c",
                script,
            ],
            capture_output=True,
            text=True,
            timeout=args.timeout,
        )
        sys.stderr.write(done.stderr[-4000:])
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if lines:
            findings = json.loads(lines[-1])
    except subprocess.TimeoutExpired:
        findings = {"ok": False, "error": f"timed out after {args.timeout} s"}
    finally:
        left = subprocess.run(
            ["ip", "netns", "pids", NETNS], capture_output=True, text=True
        ).stdout.split()
        for pid in left:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), 9)
        subprocess.run(["ip", "netns", "del", NETNS], capture_output=True)
        subprocess.run(["rm", "-rf", str(work)], capture_output=True)
        findings["leftoverProcessesKilled"] = len(left)
    print(summary(findings), file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(findings, default=str), flush=True)
    return 0 if findings.get("ok") else 1


def summary(findings: dict) -> str:
    lines = [
        f"autoscale scenario: {'PASSED' if findings.get('ok') else 'FAILED'}",
        f"  {findings.get('workspaces')} workspaces, {findings.get('workerSlots')} slots "
        f"per worker; placed: {findings.get('placed')}",
        f"  worker removed after hibernation: {findings.get('removed')}",
        f"  writes: {findings.get('writes')}",
        f"  spares: {findings.get('spares')}",
        f"  timings (s): {findings.get('timings')}",
    ]
    lines += [
        f"  {'ok  ' if ok else 'FAIL'} {name}" for name, ok in findings.get("checks", {}).items()
    ]
    if findings.get("error"):
        lines.append(f"  error: {findings['error']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--inside", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inside is not None:
        print(json.dumps(inside(args.inside), default=str), flush=True)
        return 0
    if os.geteuid() != 0:
        raise SystemExit("the autoscale scenario needs root (namespaces)")
    return outside(args)


if __name__ == "__main__":
    sys.exit(main())
