"""The deployment an operator makes, on one machine: separate hosts stood in for by namespaces.

    sudo python tests/e2e/operator_scenario.py [--store s3|local] [--keep] [--json]

Each Ray node runs in its own network namespace (its own 10.231.0.x address on a private bridge;
nothing leaves the bridge), its own PID namespace (so `ray stop` there stops only that node) and
its own mount namespace (its own `/tmp/ray` and its own `/data/minisphere`: no node sees another
node's files). The procedure is infra/README.md's, step by step:

1. every node gets the same env file (what the RayService's Secret and ConfigMap give a pod:
   admin token, S3 credentials and endpoint, Serve's fast path), sourced before `ray start`;
2. `ray start --head` (no CPUs, like the RayService's head) and two workers
   `ray start --address ... --resources '{"minisphere_workspace_slots": N}'`;
3. `serve deploy infra/serve_config.yaml` against the head's dashboard: the checked-in file as it
   is with `--store s3` (snapshots to an S3-protocol server on the bridge's host end); with
   `--store local` the snapshot store is a folder every node mounts, replication `async` and
   no spare actors;
4. black-box route checks over HTTP through the head's proxy (with Serve's fast path on, Ray
   2.60 runs its one HTTP proxy on the head): create workspaces, writes, reads, isolation,
   snapshots;
5. the drills (operator_drills.py): a secret forgotten and a workspace deleted reach every
   copy; a delete racing a wake wins; a restore to a second between two writes; with
   `--store s3`, the S3 server stopped during sync writes (503s, then every write once); with
   `--store local`, a full node (evict there, else move, and back: the newest state);
6. 500 concurrent keyed writes on the worker holding the most workspaces, then SIGKILL to every
   process in its namespace (raylet, Litestream, actors): with the config's
   `MINISPHERE_REPLICATION=sync` (`--store s3`), every acknowledged write is served from the
   other worker, restored from the replica, none doubled (checked entry by entry); with
   `async` (`--store local`), only writes answered within its window before the kill are lost;
7. `serve deploy` again with a changed config while a client keeps writing: no acknowledged write
   lost or doubled, still one directory and one scheduler actor (the same ones).

Always cleans up (namespaces, bridge, every process it started) and prints a summary; with
`--json` the last line of stdout is the findings as JSON (what the CI test reads). Needs root, `ip`,
`unshare`, `nsenter`. Hold /tmp/minisphere-ray.lock around it on a shared machine.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import gzip
import json
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVE_CONFIG = ROOT / "infra" / "serve_config.yaml"

# ---- the private network: one bridge, the host end and three namespaces on 10.231.0.0/24 --------
SUBNET_PREFIX = "10.231.0"
SUBNET_BITS = 24
HOST_END_IP = f"{SUBNET_PREFIX}.1"        # the bridge: where the driver (and the S3 server) sit
BRIDGE = "msop-br0"
NAME_PREFIX = "msop-"                     # every namespace, link and folder of this scenario
DATA_MOUNT = "/data/minisphere"           # MINISPHERE_DATA_DIR in infra/serve_config.yaml
RAY_TMP_MOUNT = "/tmp/ray"

GCS_PORT = 6379
DASHBOARD_PORT = 8265
SERVE_PORT = 8000
METRICS_PORT = 8080
WORKER_CPUS = 1                           # two workers on a 2-core machine
WORKER_SLOTS = 32                         # minisphere_workspace_slots each worker advertises
OBJECT_STORE_BYTES = 200 * 1024 * 1024    # per node: three nodes share this machine's /dev/shm

ADMIN_TOKEN = "operator-scenario-admin-" + uuid.uuid4().hex
# Ray's own cluster token (Ray 2.60 turns token authentication on whenever a token exists): the
# nodes, the dashboard's REST API and `serve deploy` all need the same one.
RAY_AUTH_TOKEN = secrets.token_hex(32)
WORKSPACES = 6
WRITES_PER_WORKSPACE = 8                  # acknowledged and snapshotted before the worker stops
WRITES_AFTER_SNAPSHOT = 2                 # acknowledged after the snapshot (on the replica only)
CONCURRENT_WRITES = 500                   # keyed writes at once on the worker about to be killed
CONCURRENT_WRITERS = 32
# async replication's loss window: Litestream ships a file's new transactions every second; the
# rest is margin for a busy shared machine (a write answered just before a sync began)
ASYNC_LOSS_WINDOW_S = 3.0

CLUSTER_UP_TIMEOUT_S = 90.0
DEPLOY_TIMEOUT_S = 150.0
RECOVERY_TIMEOUT_S = 120.0
REDEPLOY_TIMEOUT_S = 150.0
NODE_STOP_TIMEOUT_S = 60.0
HTTP_TIMEOUT_S = 30.0
POLL_S = 0.5
REDEPLOY_WRITE_PAUSE_S = 0.05             # between the writes kept going during the redeploy
CLEANUP_STEP_TIMEOUT_S = 30.0


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run(*argv: str, timeout: float = 60.0, check: bool = True, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, **kw)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): "
                           f"{(done.stderr or done.stdout)[-1500:]}")
    return done


# ---- nodes ------------------------------------------------------------------------------------
@dataclass
class Node:
    name: str                      # head | w1 | w2
    ip: str
    folder: Path                   # this node's own disk: data/, ray/ (its /tmp/ray), node.log
    process: subprocess.Popen | None = None
    init_pid: int | None = None    # PID 1 of the node's PID namespace, as the host sees it
    node_id: str | None = None
    stopped: bool = False
    extra_mounts: list[tuple[Path, str]] = field(default_factory=list)

    @property
    def netns(self) -> str:
        return f"{NAME_PREFIX}{self.name}"

    @property
    def veth_host(self) -> str:
        return f"{NAME_PREFIX}{self.name}-h"

    @property
    def veth_node(self) -> str:
        return f"{NAME_PREFIX}{self.name}-n"

    def inside(self, *argv: str) -> list[str]:
        """argv run inside this node's namespaces (network, mount, PID)."""
        return ["nsenter", "-t", str(self.init_pid), "-n", "-m", "-p", "--", *argv]


class Scenario:
    def __init__(self, store: str, keep: bool):
        self.store = store
        self.keep = keep
        self.work = Path(tempfile.mkdtemp(prefix=NAME_PREFIX))
        self.nodes = [Node("head", f"{SUBNET_PREFIX}.10", self.work / "head"),
                      Node("w1", f"{SUBNET_PREFIX}.11", self.work / "w1"),
                      Node("w2", f"{SUBNET_PREFIX}.12", self.work / "w2")]
        self.head = self.nodes[0]
        self.shared_snapshots = self.work / "shared-snapshots"
        self.env_file = self.work / "minisphere.env"
        self.created_dirs: list[Path] = []
        self.moto = None
        self.s3_endpoint: str | None = None
        # the local-store run uses async replication (the S3 run the checked-in sync), and no
        # spares, so the full-node drill's moves are not served by a spare on the full node
        self.replication = "async" if store == "local" else "sync"
        self.acknowledged_at: dict[str, float] = {}   # entry id -> when its write was answered
        self.killed_at: float | None = None
        self.findings: dict = {"store": store, "checks": {}, "timings": {}}
        self.url = f"http://{self.head.ip}:{SERVE_PORT}"
        self.dashboard = f"http://{self.head.ip}:{DASHBOARD_PORT}"
        self.admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}

    # ---- checks and timings ---------------------------------------------------------------------
    def check(self, name: str, ok: bool, detail=None) -> bool:
        self.findings["checks"][name] = bool(ok)
        if not ok:      # what a failed CI run shows first (the log's tail may be cut)
            self.findings.setdefault("details", {})[name] = repr(detail)[:1000]
        log(f"{'ok  ' if ok else 'FAIL'} {name}" + (f": {detail}" if detail is not None else ""))
        return ok

    @contextlib.contextmanager
    def timed(self, phase: str):
        started = time.monotonic()
        try:
            yield
        finally:
            self.findings["timings"][phase] = round(time.monotonic() - started, 1)

    # ---- the network ----------------------------------------------------------------------------
    def preflight(self) -> None:
        if os.geteuid() != 0:
            raise SystemExit("the operator scenario needs root (network namespaces, mounts)")
        for tool in ("ip", "unshare", "nsenter", "ray", "serve"):
            if shutil.which(tool) is None:
                raise SystemExit(f"the operator scenario needs `{tool}` on PATH")
        self.remove_stale()
        taken = run("ip", "-o", "addr", "show").stdout
        if f" {SUBNET_PREFIX}." in taken:
            raise SystemExit(f"{SUBNET_PREFIX}.0/{SUBNET_BITS} is already in use on this machine")

    @staticmethod
    def remove_stale() -> None:
        """Namespaces and links a killed earlier run left (only this scenario's names)."""
        for line in run("ip", "netns", "list", check=False).stdout.splitlines():
            name = line.split()[0] if line.strip() else ""
            if name.startswith(NAME_PREFIX):
                kill_netns_processes(name)
                run("ip", "netns", "del", name, check=False)
        if run("ip", "link", "show", BRIDGE, check=False).returncode == 0:
            run("ip", "link", "del", BRIDGE, check=False)

    def network_up(self) -> None:
        run("ip", "link", "add", BRIDGE, "type", "bridge")
        run("ip", "addr", "add", f"{HOST_END_IP}/{SUBNET_BITS}", "dev", BRIDGE)
        run("ip", "link", "set", BRIDGE, "up")
        for node in self.nodes:
            run("ip", "netns", "add", node.netns)
            run("ip", "link", "add", node.veth_host, "type", "veth", "peer", "name", node.veth_node)
            run("ip", "link", "set", node.veth_node, "netns", node.netns)
            run("ip", "link", "set", node.veth_host, "master", BRIDGE, "up")
            ns = ("ip", "netns", "exec", node.netns)
            run(*ns, "ip", "link", "set", "lo", "up")
            run(*ns, "ip", "addr", "add", f"{node.ip}/{SUBNET_BITS}", "dev", node.veth_node)
            run(*ns, "ip", "link", "set", node.veth_node, "up")
        # no default route anywhere: a node reaches the bridge's subnet and its own loopback only

    # ---- the nodes' environment (the RayService's Secret + ConfigMap) ----------------------------
    def write_env_file(self, s3_endpoint: str | None) -> None:
        env = {"PYTHONPATH": str(ROOT), "RAY_SERVE_THROUGHPUT_OPTIMIZED": "1",
               "MINISPHERE_ADMIN_TOKEN": ADMIN_TOKEN, "RAY_USAGE_STATS_ENABLED": "0",
               **ray_auth_env()}
        if s3_endpoint:
            env.update({"MINISPHERE_S3_ENDPOINT_URL": s3_endpoint,
                        "MINISPHERE_S3_ACCESS_KEY_ID": "testing",
                        "MINISPHERE_S3_SECRET_ACCESS_KEY": "testing",
                        "AWS_EC2_METADATA_DISABLED": "true"})
        fd = os.open(self.env_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.writelines(f"{name}={json.dumps(value)}\n" for name, value in env.items())

    def start_s3(self) -> str:
        """An S3-protocol server (moto) on the bridge's host end: reachable from every node."""
        import boto3
        from moto.server import ThreadedMotoServer
        logging.getLogger("werkzeug").setLevel(logging.WARNING)   # no line per S3 request
        self.moto = ThreadedMotoServer(ip_address=HOST_END_IP, port=0, verbose=False)
        self.moto.start()
        host, port = self.moto.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        bucket = self.config_env(load_config())["MINISPHERE_S3_BUCKET"]
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                     aws_access_key_id="testing", aws_secret_access_key="testing"
                     ).create_bucket(Bucket=bucket)
        return endpoint

    def run_on_head(self, *argv: str, timeout: float) -> subprocess.CompletedProcess:
        """A command inside the head node's namespaces, as a Ray driver of the cluster."""
        return run(*self.head.inside(*argv), timeout=timeout,
                   env={**os.environ, **ray_auth_env()})

    @staticmethod
    def pids_of(node: Node) -> list[str]:
        return netns_pids(node.netns)

    def stop_s3(self) -> None:
        """The S3-protocol server down (its objects stay in this process's memory)."""
        self.moto.stop()

    def start_s3_again(self) -> None:
        """The S3-protocol server back on the same address, with the same objects."""
        from moto.server import ThreadedMotoServer
        host, port = self.s3_endpoint.rsplit("/", 1)[-1].split(":")
        self.moto = ThreadedMotoServer(ip_address=host, port=int(port), verbose=False)
        self.moto.start()

    @staticmethod
    def config_env(config: dict) -> dict:
        return config["applications"][0]["runtime_env"]["env_vars"]

    def mount_point(self, path: str) -> None:
        """The mount point every node's own folder is bound on (made if absent, removed after)."""
        target = Path(path)
        missing = []
        probe = target
        while not probe.exists():
            missing.append(probe)
            probe = probe.parent
        for folder in reversed(missing):
            folder.mkdir()
            self.created_dirs.append(folder)

    def start_node(self, node: Node, ray_args: list[str]) -> None:
        (node.folder / "data").mkdir(parents=True, exist_ok=True)
        (node.folder / "ray").mkdir(parents=True, exist_ok=True)
        mounts = [(node.folder / "data", DATA_MOUNT), (node.folder / "ray", RAY_TMP_MOUNT)]
        if self.store == "local":   # the one folder all nodes reach, as S3 would be
            (node.folder / "data" / "snapshots").mkdir(exist_ok=True)
            mounts.append((self.shared_snapshots, f"{DATA_MOUNT}/snapshots"))
        script = ["set -e"] + [f"mount --bind {q(src)} {q(dst)}" for src, dst in mounts] + [
            f"cd {q(ROOT)}", "set -a", f". {q(self.env_file)}", "set +a",
            "exec ray start --block " + " ".join(q(a) for a in ray_args)]
        out = open(node.folder / "node.log", "w")   # noqa: SIM115 - closed with the process
        node.process = subprocess.Popen(
            ["ip", "netns", "exec", node.netns, "unshare", "--mount", "--pid", "--fork",
             "--mount-proc", "--propagation", "private", "sh", "-c", "\n".join(script)],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 10
        while node.init_pid is None and time.monotonic() < deadline:
            children = Path(f"/proc/{node.process.pid}/task/{node.process.pid}/children")
            with contextlib.suppress(OSError):
                pids = children.read_text().split()
                node.init_pid = int(pids[0]) if pids else None
            time.sleep(0.05)
        if node.init_pid is None:
            raise RuntimeError(f"node {node.name} did not start: {self.node_log(node)}")

    @staticmethod
    def node_log(node: Node, chars: int = 2000) -> str:
        with contextlib.suppress(OSError):
            return (node.folder / "node.log").read_text()[-chars:]
        return ""

    def cluster_up(self) -> None:
        self.mount_point(DATA_MOUNT)
        self.mount_point(RAY_TMP_MOUNT)   # absent on a machine that never ran Ray before
        if self.store == "local":
            self.shared_snapshots.mkdir(mode=0o700)
        def common(cpus: int) -> list[str]:
            return [f"--num-cpus={cpus}", f"--metrics-export-port={METRICS_PORT}",
                    f"--object-store-memory={OBJECT_STORE_BYTES}", "--disable-usage-stats"]
        # the head takes no workloads (as in the RayService): no CPUs, no workspace slots
        self.start_node(self.head, [
            "--head", f"--node-ip-address={self.head.ip}", f"--port={GCS_PORT}",
            "--dashboard-host=0.0.0.0", f"--dashboard-port={DASHBOARD_PORT}", *common(0)])
        self.wait_nodes(1)
        slots = json.dumps({"minisphere_workspace_slots": WORKER_SLOTS})
        for node in self.nodes[1:]:
            self.start_node(node, [f"--address={self.head.ip}:{GCS_PORT}",
                                   f"--node-ip-address={node.ip}", f"--resources={slots}",
                                   *common(WORKER_CPUS)])
        alive = self.wait_nodes(len(self.nodes))
        by_ip = {n["node_ip"]: n for n in alive}
        for node in self.nodes:
            node.node_id = by_ip[node.ip]["node_id"]
        self.findings["nodes"] = [
            {"name": n.name, "ip": n.ip, "nodeId": n.node_id[:12],
             "slots": by_ip[n.ip].get("resources_total", {}).get("minisphere_workspace_slots", 0),
             "cpus": by_ip[n.ip].get("resources_total", {}).get("CPU", 0)} for n in self.nodes]

    # ---- the head's REST APIs (dashboard: state and Serve) --------------------------------------
    def state(self, kind: str, **filters) -> list[dict]:
        import httpx
        params = [("limit", "10000"), ("detail", "true")]
        for key, value in filters.items():
            params += [("filter_keys", key), ("filter_predicates", "="), ("filter_values", value)]
        answer = httpx.get(f"{self.dashboard}/api/v0/{kind}", params=params,
                           headers=DASHBOARD_HEADERS, timeout=HTTP_TIMEOUT_S).json()
        return answer["data"]["result"]["result"]

    def wait_nodes(self, count: int) -> list[dict]:
        deadline = time.monotonic() + CLUSTER_UP_TIMEOUT_S
        last = None
        while time.monotonic() < deadline:
            try:
                alive = [n for n in self.state("nodes") if n.get("state") == "ALIVE"]
                if len(alive) >= count:
                    return alive
                last = f"{len(alive)} alive"
            except Exception as exc:  # noqa: BLE001 - the dashboard is still starting
                last = repr(exc)
            for node in self.nodes:
                if node.process is not None and node.process.poll() is not None and \
                        not node.stopped:
                    raise RuntimeError(f"node {node.name} exited: {self.node_log(node)}")
            time.sleep(POLL_S)
        raise TimeoutError(f"cluster: {count} nodes not alive in time ({last})")

    def serve_deploy(self, config_path: Path) -> None:
        run("serve", "deploy", str(config_path), "-a", self.dashboard, timeout=120, cwd=ROOT,
            env={**os.environ, **ray_auth_env()})

    def wait_running(self, timeout: float, replicas: int | None = None) -> dict:
        import httpx
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                apps = httpx.get(f"{self.dashboard}/api/serve/applications/",
                                 headers=DASHBOARD_HEADERS,
                                 timeout=HTTP_TIMEOUT_S).json()["applications"]
                app = apps.get("minisphere") or {}
                last = app.get("status")
                deployment = (app.get("deployments") or {}).get("MiniSphereIngress") or {}
                running = [r for r in deployment.get("replicas", [])
                           if r.get("state") == "RUNNING"]
                if last == "RUNNING" and (replicas is None or len(running) >= replicas):
                    health = httpx.get(f"{self.url}/healthz", timeout=HTTP_TIMEOUT_S)
                    if health.status_code == 200:
                        return {"status": last, "replicas": len(running),
                                "replicaNodes": sorted(self.name_of(r.get("node_id"))
                                                       for r in running)}
                if last == "DEPLOY_FAILED":
                    raise RuntimeError(f"serve deploy failed: {app.get('message', '')[-2000:]}")
            except (httpx.HTTPError, KeyError, ValueError) as exc:
                last = repr(exc)
            time.sleep(POLL_S)
        raise TimeoutError(f"the application did not become RUNNING in time ({last})")

    def name_of(self, node_id: str | None) -> str:
        return next((n.name for n in self.nodes if node_id and n.node_id == node_id), "?")

    def singletons(self) -> dict:
        """The directory and scheduler actors alive in the cluster (there must be one each)."""
        found = {}
        for cls in ("DirectoryActor", "ScheduledTasksActor"):
            alive = [a for a in self.state("actors", class_name=cls) if a["state"] == "ALIVE"]
            found[cls] = sorted(a["actor_id"] for a in alive)
        return found

    # ---- HTTP, as the service's users see it ----------------------------------------------------
    def call(self, http, workspace: str, token: str, method: str, body: dict,
             key: str | None = None, deadline: float | None = None):
        """One workspace call; until `deadline`, a 503 / connection error is sent again (with
        the same Idempotency-Key, so a write cannot apply twice)."""
        import httpx
        headers = {"Authorization": f"Bearer {token}"}
        if key:
            headers["Idempotency-Key"] = key
        last = None
        while True:
            try:
                answer = http.post(f"/v1/w/{workspace}/{method}", json=body, headers=headers)
                if answer.status_code != 503 or deadline is None:
                    return answer
                last = answer.text[:300]
            except httpx.HTTPError as exc:
                if deadline is None:
                    raise
                last = repr(exc)
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{workspace}.{method}: no answer before the deadline; "
                                   f"the last: {last}")
            time.sleep(POLL_S)

    def route_checks(self, http) -> dict:
        import httpx
        # RAY_SERVE_THROUGHPUT_OPTIMIZED=1 (the env file, as infra/README.md asks) turns on
        # Serve's direct ingress in Ray 2.60: one HTTP proxy, on the head, whatever
        # proxy_location says; the workers' replicas take requests from it
        self.check("the head's proxy answers /healthz",
                   http.get("/healthz").status_code == 200)
        self.findings["proxies"] = {}
        for node in self.nodes[1:]:
            try:
                self.findings["proxies"][node.name] = httpx.get(
                    f"http://{node.ip}:{SERVE_PORT}/healthz", timeout=HTTP_TIMEOUT_S).status_code
            except httpx.HTTPError as exc:
                self.findings["proxies"][node.name] = exc.__class__.__name__
        self.check("contracts listed", http.get("/v1/contracts").status_code == 200)
        self.check("no token: 401", http.post("/v1/workspaces", json={}).status_code == 401)
        workspaces = {}
        for index in range(WORKSPACES):
            workspace_id = f"op-{index}-{uuid.uuid4().hex[:6]}"
            made = http.post("/v1/workspaces", json={"id": workspace_id}, headers=self.admin)
            if made.status_code != 201:
                raise RuntimeError(f"create {workspace_id}: {made.status_code} {made.text}")
            workspaces[workspace_id] = {"token": made.json()["token"], "ids": [], "late": []}
        deadline = time.monotonic() + DEPLOY_TIMEOUT_S
        for workspace_id, ws in workspaces.items():
            for n in range(WRITES_PER_WORKSPACE):
                answer = self.call(http, workspace_id, ws["token"], "capture", {
                    "content": f"{workspace_id} decision {n} {uuid.uuid4().hex}: 東京 ünïcødé",
                    "tags": ["operator"]}, key=uuid.uuid4().hex, deadline=deadline)
                if answer.status_code != 200 or answer.json().get("outcome") != "stored":
                    raise RuntimeError(f"capture on {workspace_id}: {answer.status_code} "
                                       f"{answer.text[:300]}")
                ws["ids"].append(answer.json()["id"])
        first = next(iter(workspaces.values()))
        first_id = next(iter(workspaces))
        count = self.call(http, first_id, first["token"], "getCount", {}).json()["count"]
        self.check("getCount after writes", count == WRITES_PER_WORKSPACE, count)
        recalled = self.call(http, first_id, first["token"], "recall",
                             {"query": "decision", "topK": 3}).json()
        self.check("recall finds the writes", len(recalled.get("items", [])) > 0)
        other_id = list(workspaces)[1]
        foreign = self.call(http, other_id, first["token"], "getCount", {})
        self.check("a workspace token is refused on another workspace",
                   foreign.status_code in (401, 403), foreign.status_code)
        return workspaces

    def placement(self, http, workspaces: dict) -> dict[str, str]:
        placed = {}
        for workspace_id in workspaces:
            record = http.get(f"/v1/workspaces/{workspace_id}", headers=self.admin).json()
            placed[workspace_id] = self.name_of(record.get("nodeId"))
        return placed

    def snapshot_all(self, http, workspaces: dict) -> None:
        for workspace_id in workspaces:
            answer = http.post(f"/v1/workspaces/{workspace_id}/snapshot", headers=self.admin)
            if answer.status_code != 200:
                raise RuntimeError(f"snapshot {workspace_id}: {answer.status_code} {answer.text}")
        for workspace_id, ws in workspaces.items():
            for n in range(WRITES_AFTER_SNAPSHOT):
                answer = self.call(http, workspace_id, ws["token"], "capture", {
                    "content": f"{workspace_id} late note {n} {uuid.uuid4().hex}"})
                ws["late"].append(answer.json()["id"])

    def present(self, http, workspace_id: str, token: str, ids: list[str],
                deadline: float) -> int:
        found = 0
        for entry_id in ids:
            answer = self.call(http, workspace_id, token, "getEntry", {"id": entry_id},
                               deadline=deadline)
            here = answer.status_code == 200 and answer.json().get("id") == entry_id
            found += here
            if not here:            # what a missing write answered: for the findings
                self.findings.setdefault("missing", []).append(
                    [workspace_id, entry_id, answer.status_code, answer.text[:160]])
        return found

    # ---- nothing deleted or forgotten survives on any node -------------------------------------
    def holding(self, secret: str) -> list[str]:
        """Every file on any node's disk, and every stored object, that holds `secret` (stored
        snapshots are gzip: they are searched decompressed)."""
        needle = secret.encode()
        found = []

        def holds(blob: bytes, name: str) -> bool:
            if name.endswith(".gz"):
                with contextlib.suppress(OSError, EOFError, zlib.error):
                    blob = gzip.decompress(blob)
            return needle in blob

        def read(path: Path) -> bytes:
            """A file's bytes; none when it went away since it was listed (sweeps run)."""
            try:
                return path.read_bytes() if path.is_file() else b""
            except (FileNotFoundError, IsADirectoryError):
                return b""

        for node in self.nodes:
            for path in (node.folder / "data").rglob("*"):
                if holds(read(path), path.name):
                    found.append(f"{node.name}:{path.relative_to(node.folder)}")
        if self.store == "local":
            for path in self.shared_snapshots.rglob("*"):
                if holds(read(path), path.name):
                    found.append(f"store:{path.relative_to(self.shared_snapshots)}")
            return found
        import boto3
        s3 = boto3.client("s3", endpoint_url=self.s3_endpoint, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
        bucket = self.config_env(load_config())["MINISPHERE_S3_BUCKET"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for item in page.get("Contents", []):
                try:
                    blob = s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
                except s3.exceptions.NoSuchKey:      # deleted since it was listed
                    continue
                if holds(blob, item["Key"]):
                    found.append(f"store:{item['Key']}")
        return found

    def new_drill_workspace(self, http, label: str) -> tuple[str, dict]:
        workspace_id = f"drill-{label}-{uuid.uuid4().hex[:6]}"
        made = http.post("/v1/workspaces", json={"id": workspace_id}, headers=self.admin)
        if made.status_code != 201:
            raise RuntimeError(f"create {workspace_id}: {made.status_code} {made.text}")
        return workspace_id, {"Authorization": f"Bearer {made.json()['token']}"}

    def drill(self, http, workspace_id: str, headers: dict, method: str, body: dict,
              key: str | None = None) -> dict:
        answer = http.post(f"/v1/w/{workspace_id}/{method}", json=body,
                           headers={**headers, **({"Idempotency-Key": key} if key else {})})
        if answer.status_code != 200:
            raise RuntimeError(f"{method} on {workspace_id}: {answer.status_code} "
                               f"{answer.text[:300]}")
        return answer.json()

    def admin_step(self, http, verb: str, path: str, **kw):
        answer = http.request(verb, path, headers=self.admin, **kw)
        if answer.status_code != 200:
            raise RuntimeError(f"{verb} {path}: {answer.status_code} {answer.text[:300]}")
        return answer

    def drills(self, http, workspaces: dict) -> None:
        import operator_drills as drills  # this file's folder (run as a script)
        for name, drill in (("forget", drills.forget_drill), ("delete", drills.delete_drill),
                            ("delete racing a wake", drills.delete_racing_wake_drill),
                            ("restore to a moment", drills.restore_to_moment_drill)):
            with self.timed(f"drill: {name}"):
                drill(self, http)
        if self.store == "local":       # no spares here: a full node's wakes really move
            with self.timed("drill: full node"):
                drills.full_node_drill(self, http)
        else:                           # sync replication to the S3 server on the bridge
            with self.timed("drill: S3 down"):
                drills.s3_outage_drill(self, http, workspaces, next(iter(workspaces)))

    # ---- a worker leaves ------------------------------------------------------------------------
    def concurrent_writes(self, workspaces: dict, targets: list[str]) -> dict[str, list[str]]:
        """CONCURRENT_WRITES keyed captures at once over `targets`; the acknowledged ids of each
        (a 503 is sent again with its key, so each write is applied at most once)."""
        import httpx
        acknowledged: dict[str, list[str]] = {w: [] for w in targets}
        lock = threading.Lock()

        def one(n: int) -> None:
            workspace_id = targets[n % len(targets)]
            with httpx.Client(base_url=self.url, timeout=HTTP_TIMEOUT_S) as client:
                answer = self.call(client, workspace_id, workspaces[workspace_id]["token"],
                                   "capture", {"content": f"concurrent write {n} "
                                                          f"{uuid.uuid4().hex}"},
                                   key=uuid.uuid4().hex,
                                   deadline=time.monotonic() + RECOVERY_TIMEOUT_S)
            if answer.status_code == 200:
                with lock:
                    acknowledged[workspace_id].append(answer.json()["id"])
                    self.acknowledged_at[answer.json()["id"]] = time.monotonic()
        with ThreadPoolExecutor(CONCURRENT_WRITERS) as pool:
            list(pool.map(one, range(CONCURRENT_WRITES)))
        return acknowledged

    def kill_worker(self, http, workspaces: dict, placed: dict) -> None:
        """Concurrent keyed writes on the worker holding the most workspaces, then SIGKILL to
        every process in its namespace (raylet, Litestream, actors: no `ray stop`, nothing
        flushed on the way out): with `MINISPHERE_REPLICATION=sync` every acknowledged write
        is served from the other worker, restored from the replica, none doubled."""
        per_worker = {n.name: [w for w, where in placed.items() if where == n.name]
                      for n in self.nodes[1:]}
        victim_name = max(per_worker, key=lambda name: len(per_worker[name]))
        victim = next(n for n in self.nodes if n.name == victim_name)
        moved = per_worker[victim_name]
        self.findings["stopped"] = victim_name
        if not self.check("the killed worker holds workspaces", bool(moved), per_worker):
            return
        with self.timed("concurrent writes"):
            late = self.concurrent_writes(workspaces, moved)
        for workspace_id, ids in late.items():
            workspaces[workspace_id]["late"].extend(ids)
        acknowledged = sum(len(ids) for ids in late.values())
        self.check("the concurrent writes were acknowledged",
                   acknowledged == CONCURRENT_WRITES, acknowledged)
        with self.timed("kill -9"):
            killed = kill_netns_processes(victim.netns)
            self.killed_at = time.monotonic()
            victim.stopped = True
        self.findings["killed"] = {"worker": victim_name, "processes": killed}
        self.served_again(http, workspaces, placed, moved, victim_name)

    def served_again(self, http, workspaces: dict, placed: dict, moved: list[str],
                     victim_name: str) -> None:
        """Every workspace answers again; the moved ones from the replica, every acknowledged
        write present once; and they take writes again."""
        deadline = time.monotonic() + RECOVERY_TIMEOUT_S
        started = time.monotonic()
        report = {}
        for workspace_id, ws in workspaces.items():
            answer = self.call(http, workspace_id, ws["token"], "getCount", {},
                               deadline=deadline)
            if answer.status_code != 200:
                raise RuntimeError(f"{workspace_id} after the kill: {answer.status_code} "
                                   f"{answer.text[:300]}")
            report[workspace_id] = {"count": answer.json()["count"]}
        self.findings["timings"]["served again after the kill"] = round(
            time.monotonic() - started, 1)
        after = self.placement(http, workspaces)
        for workspace_id, ws in workspaces.items():
            record = http.get(f"/v1/workspaces/{workspace_id}", headers=self.admin).json()
            activation = (record.get("durability") or {}).get("activation") or {}
            report[workspace_id].update(
                before=placed[workspace_id], after=after[workspace_id],
                source=activation.get("source"),
                snapshotted=self.present(http, workspace_id, ws["token"], ws["ids"], deadline),
                late=self.present(http, workspace_id, ws["token"], ws["late"], deadline),
                acknowledged=len(ws["ids"]) + len(ws["late"]))
        self.findings["moved"] = {w: report[w] for w in moved}
        self.findings["writesChecked"] = sum(r["acknowledged"] for r in report.values())
        self.check("moved workspaces now on the other worker",
                   all(report[w]["after"] not in (victim_name, "?") for w in moved),
                   {w: report[w]["after"] for w in moved})
        self.check("moved workspaces restored from their replicas",
                   all(report[w]["source"] == "replica" for w in moved),
                   {w: report[w]["source"] for w in moved})
        self.loss_checks(report)
        for workspace_id in moved:        # and they take writes again
            ws = workspaces[workspace_id]
            answer = self.call(http, workspace_id, ws["token"], "capture",
                               {"content": f"{workspace_id} after the move {uuid.uuid4().hex}"},
                               key=uuid.uuid4().hex, deadline=deadline)
            ws["ids"].append(answer.json()["id"])
        self.check("moved workspaces take writes again", True)

    def loss_checks(self, report: dict) -> None:
        """sync: every acknowledged write is there. async: only writes answered within the
        documented window before the kill may be missing. Either way none is there twice."""
        present = {w: r["snapshotted"] + r["late"] for w, r in report.items()}
        missing = [entry for _, entry, *_ in self.findings.get("missing", [])]
        ages = [round(self.killed_at - self.acknowledged_at[entry], 2) if
                entry in self.acknowledged_at and self.killed_at else None for entry in missing]
        self.findings["loss"] = {"mode": self.replication, "lost": len(missing),
                                 "acknowledgedSecondsBeforeKill": sorted(ages, key=str)[:20]}
        if self.replication == "sync":
            self.check("no acknowledged write lost",
                       all(present[w] == r["acknowledged"] for w, r in report.items()),
                       {w: (present[w], r["acknowledged"]) for w, r in report.items()})
        else:
            self.check(f"async: only writes answered in the last {ASYNC_LOSS_WINDOW_S} s "
                       "before the kill lost",
                       all(age is not None and age <= ASYNC_LOSS_WINDOW_S for age in ages), ages)
        self.check("no acknowledged write applied twice",
                   all(r["count"] == present[w] for w, r in report.items()),
                   {w: (r["count"], present[w]) for w, r in report.items()})

    # ---- redeploy -----------------------------------------------------------------------------
    def redeploy(self, http, workspaces: dict, base_config: dict) -> None:
        changed = copy.deepcopy(base_config)
        deployment = changed["applications"][0]["deployments"][0]
        deployment["autoscaling_config"]["min_replicas"] = 2
        self.config_env(changed)["MINISPHERE_MIN_REPLICAS"] = "2"   # new env: new replicas
        path = self.work / "serve_config.changed.yaml"
        dump_config(changed, path)
        before = self.singletons()
        acknowledged: dict[str, list[str]] = {w: [] for w in list(workspaces)[:2]}
        counts = {w: self.call(http, w, workspaces[w]["token"], "getCount", {}).json()["count"]
                  for w in acknowledged}
        stop = threading.Event()
        errors: list[str] = []

        def keep_writing():
            import httpx
            with httpx.Client(base_url=self.url, timeout=HTTP_TIMEOUT_S) as client:
                n = 0
                while not stop.is_set():
                    for workspace_id in acknowledged:
                        n += 1
                        try:
                            answer = self.call(
                                client, workspace_id, workspaces[workspace_id]["token"],
                                "capture", {"content": f"redeploy write {n} {uuid.uuid4().hex}"},
                                key=uuid.uuid4().hex,
                                deadline=time.monotonic() + REDEPLOY_TIMEOUT_S)
                        except TimeoutError as exc:
                            errors.append(str(exc))
                            continue
                        if answer.status_code == 200:
                            acknowledged[workspace_id].append(answer.json()["id"])
                        else:
                            errors.append(f"{answer.status_code} {answer.text[:200]}")
                    time.sleep(REDEPLOY_WRITE_PAUSE_S)

        writer = threading.Thread(target=keep_writing, daemon=True)
        writer.start()
        with self.timed("redeploy"):
            self.serve_deploy(path)
            status = self.wait_running(REDEPLOY_TIMEOUT_S, replicas=2)
        time.sleep(2)                    # writes keep going on the new replicas
        stop.set()
        writer.join(REDEPLOY_TIMEOUT_S)
        after = self.singletons()
        deadline = time.monotonic() + RECOVERY_TIMEOUT_S
        kept = {w: self.present(http, w, workspaces[w]["token"], ids, deadline)
                for w, ids in acknowledged.items()}
        final = {w: self.call(http, w, workspaces[w]["token"], "getCount", {}).json()["count"]
                 for w in acknowledged}
        written = sum(len(ids) for ids in acknowledged.values())
        self.findings["redeploy"] = {
            "change": "min_replicas 1 -> 2 (and MINISPHERE_MIN_REPLICAS)", **status,
            "writesDuring": written, "writesKept": sum(kept.values()), "errors": errors[:5],
            "directory": len(after["DirectoryActor"]),
            "scheduler": len(after["ScheduledTasksActor"])}
        self.findings["writesChecked"] = self.findings.get("writesChecked", 0) + written
        self.check("writes kept going during the redeploy", written > 0 and not errors,
                   f"{written} acknowledged, {len(errors)} failed")
        self.check("no acknowledged write lost in the redeploy",
                   all(kept[w] == len(acknowledged[w]) for w in acknowledged), kept)
        self.check("no write applied twice",
                   all(final[w] == counts[w] + len(acknowledged[w]) for w in acknowledged),
                   {w: (counts[w], len(acknowledged[w]), final[w]) for w in acknowledged})
        self.check("one directory and one scheduler, the same ones",
                   before == after and all(len(v) == 1 for v in after.values()),
                   {k: len(v) for k, v in after.items()})
        self.check("the changed config is live", status["replicas"] >= 2, status)

    # ---- the whole run --------------------------------------------------------------------------
    def execute(self) -> dict:
        import httpx
        started = time.monotonic()
        self.preflight()
        try:
            with self.timed("network"):
                self.network_up()
            endpoint = self.s3_endpoint = self.start_s3() if self.store == "s3" else None
            self.write_env_file(endpoint)
            base = load_config()
            config_path = SERVE_CONFIG
            if self.store == "local":
                base = copy.deepcopy(base)
                self.config_env(base).update(MINISPHERE_SNAPSHOT_STORE="local",
                                             MINISPHERE_REPLICATION=self.replication,
                                             MINISPHERE_SPARE_ACTORS="0")
                config_path = self.work / "serve_config.local.yaml"
                dump_config(base, config_path)
            self.findings["config"] = str(config_path.relative_to(ROOT)
                                          if config_path == SERVE_CONFIG else
                                          "infra/serve_config.yaml with "
                                          "MINISPHERE_SNAPSHOT_STORE=local, "
                                          "MINISPHERE_REPLICATION=async, "
                                          "MINISPHERE_SPARE_ACTORS=0")
            with self.timed("cluster up"):
                self.cluster_up()
            log(f"nodes: {self.findings['nodes']}")
            with self.timed("serve deploy"):
                self.serve_deploy(config_path)
                self.findings["deployed"] = self.wait_running(DEPLOY_TIMEOUT_S)
            with httpx.Client(base_url=self.url, timeout=HTTP_TIMEOUT_S,
                              headers={}) as http:
                with self.timed("route checks"):
                    workspaces = self.route_checks(http)
                    placed = self.placement(http, workspaces)
                    self.snapshot_all(http, workspaces)
                self.findings["placedOn"] = placed
                log(f"placed: {placed}")
                self.check("one directory and one scheduler after the deploy",
                           all(len(v) == 1 for v in self.singletons().values()))
                self.drills(http, workspaces)
                placed = self.placement(http, workspaces)    # the drills may have moved some
                self.kill_worker(http, workspaces, placed)
                self.redeploy(http, workspaces, base)
            self.findings["ok"] = all(self.findings["checks"].values())
        except BaseException as exc:
            self.findings["ok"] = False
            self.findings["error"] = f"{exc.__class__.__name__}: {exc}"[:3000]
            self.findings["nodeLogs"] = {n.name: self.node_log(n, 800) for n in self.nodes}
            if not isinstance(exc, Exception):
                raise
        finally:
            with self.timed("cleanup"):
                self.findings["cleanup"] = self.cleanup()
            self.findings["timings"]["total"] = round(time.monotonic() - started, 1)
        return self.findings

    def cleanup(self) -> dict:
        """Every node stopped (`ray stop --force` inside it, then its PID namespace's init
        killed, which takes every process left in it), namespaces and links removed."""
        left = {}
        for node in reversed(self.nodes):
            if node.init_pid is not None and node.process is not None and \
                    node.process.poll() is None:
                with contextlib.suppress(Exception):
                    run(*node.inside("ray", "stop", "--force"), timeout=CLEANUP_STEP_TIMEOUT_S,
                        check=False)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(node.init_pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    node.process.wait(CLEANUP_STEP_TIMEOUT_S)
            left[node.name] = kill_netns_processes(node.netns)
            run("ip", "netns", "del", node.netns, check=False)
            run("ip", "link", "del", node.veth_host, check=False)
        run("ip", "link", "del", BRIDGE, check=False)
        if self.moto is not None:
            with contextlib.suppress(Exception):
                self.moto.stop()
        for folder in reversed(self.created_dirs):
            with contextlib.suppress(OSError):
                folder.rmdir()
        if not self.keep:
            shutil.rmtree(self.work, ignore_errors=True)
        stale = [line for line in run("ip", "netns", "list", check=False).stdout.splitlines()
                 if line.startswith(NAME_PREFIX)]
        return {"leftoverProcessesKilled": left, "namespacesLeft": stale,
                "kept": str(self.work) if self.keep else None}


DASHBOARD_HEADERS = {"Authorization": f"Bearer {RAY_AUTH_TOKEN}"}


def ray_auth_env() -> dict[str, str]:
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": RAY_AUTH_TOKEN}


def netns_pids(netns: str) -> list[str]:
    return run("ip", "netns", "pids", netns, check=False).stdout.split()


def kill_netns_processes(netns: str) -> int:
    """SIGKILL whatever still runs in the network namespace; how many there were."""
    pids = netns_pids(netns)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    return len(pids)


def q(value) -> str:
    import shlex
    return shlex.quote(str(value))


def load_config() -> dict:
    import yaml
    return yaml.safe_load(SERVE_CONFIG.read_text(encoding="utf-8"))


def dump_config(config: dict, path: Path) -> None:
    import yaml
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def summary(findings: dict) -> str:
    lines = [f"operator scenario ({findings['store']} snapshots): "
             f"{'PASSED' if findings.get('ok') else 'FAILED'}"]
    for node in findings.get("nodes", []):
        lines.append(f"  node {node['name']:<4} {node['ip']:<12} {node['nodeId']}  "
                     f"CPU {node['cpus']:g}  workspace slots {node['slots']:g}")
    if "proxies" in findings:
        lines.append(f"  workers' own port {SERVE_PORT} (no proxy expected): {findings['proxies']}")
    if "placedOn" in findings:
        lines.append(f"  placed: {findings['placedOn']}")
    if "stopped" in findings:
        moved = findings.get("moved", {})
        lines.append(f"  kill -9 on {findings['stopped']}: {len(moved)} workspaces moved -> "
                     + ", ".join(f"{w} {r['before']}->{r['after']} ({r['source']}, "
                                 f"{r['snapshotted'] + r['late']} of {r['acknowledged']} "
                                 "acknowledged writes present)" for w, r in moved.items()))
    lines.append(f"  writes checked: {findings.get('writesChecked', 0)}")
    if "redeploy" in findings:
        lines.append(f"  redeploy: {findings['redeploy']}")
    lines.append(f"  timings (s): {findings['timings']}")
    failed = [name for name, ok in findings["checks"].items() if not ok]
    if failed:
        lines.append(f"  failed checks: {failed}")
    if findings.get("error"):
        lines.append(f"  error: {findings['error']}")
    lines.append(f"  cleanup: {findings.get('cleanup')}")
    return "\n".join(lines)


def interrupted(*_) -> None:
    """SIGTERM (a CI timeout, an operator's kill) unwinds like Ctrl-C: the cleanup still runs."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("s3", "local"), default="s3",
                        help="snapshot store: s3 (moto on the bridge; the config unchanged) or "
                             "local (one folder every node mounts)")
    parser.add_argument("--keep", action="store_true", help="keep the nodes' folders and logs")
    parser.add_argument("--json", action="store_true", help="findings as JSON on the last line")
    args = parser.parse_args(argv)
    scenario = Scenario(args.store, args.keep)
    signal.signal(signal.SIGTERM, interrupted)
    try:
        findings = scenario.execute()
    except KeyboardInterrupt:
        findings = scenario.findings
    print(summary(findings), file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(findings, default=str), flush=True)
    return 0 if findings.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
