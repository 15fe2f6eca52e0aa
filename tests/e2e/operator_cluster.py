"""The operator scenario's cluster (operator_scenario.py): three Ray nodes on one machine, each
in its own network namespace (its own 10.231.0.x address on a private bridge; nothing leaves the
bridge), its own PID namespace (so `ray stop` there stops only that node) and its own mount
namespace (its own `/tmp/ray` and its own `/data/minisphere`: no node sees another node's files);
the env file every node sources before `ray start` (what the RayService's Secret and ConfigMap
give a pod); the S3-protocol server on the bridge's host end; `serve deploy` and the dashboard's
REST API; and the cleanup (namespaces, bridge, every process started).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVE_CONFIG = ROOT / "infra" / "serve_config.yaml"

# ---- the private network: one bridge, the host end and three namespaces on 10.231.0.0/24 --------
SUBNET_PREFIX = "10.231.0"
SUBNET_BITS = 24
HOST_END_IP = f"{SUBNET_PREFIX}.1"  # the bridge: where the driver (and the S3 server) sit
BRIDGE = "msop-br0"
NAME_PREFIX = "msop-"  # every namespace, link and folder of this scenario
DATA_MOUNT = "/data/minisphere"  # MINISPHERE_DATA_DIR in infra/serve_config.yaml
RAY_TMP_MOUNT = "/tmp/ray"

GCS_PORT = 6379
DASHBOARD_PORT = 8265
SERVE_PORT = 8000
METRICS_PORT = 8080
WORKER_CPUS = 1  # two workers on a 2-core machine
WORKER_SLOTS = 32  # minisphere_workspace_slots each worker advertises
OBJECT_STORE_BYTES = 200 * 1024 * 1024  # per node: three nodes share this machine's /dev/shm

ADMIN_TOKEN = "operator-scenario-admin-" + uuid.uuid4().hex
# Ray's own cluster token (Ray 2.60 turns token authentication on whenever a token exists): the
# nodes, the dashboard's REST API and `serve deploy` all need the same one.
RAY_AUTH_TOKEN = secrets.token_hex(32)
CLUSTER_UP_TIMEOUT_S = 90.0
HTTP_TIMEOUT_S = 30.0
DEPLOY_TIMEOUT_S = 150.0  # for `serve deploy`'s replicas to run, and the first writes to land
POLL_S = 0.5
CLEANUP_STEP_TIMEOUT_S = 30.0
# the launcher's own (actors.ray_env): HAProxy names each client to the replicas
HAPROXY_RETRY_ON_WITH_CLIENT_ADDRESS = "conn-failure\n    option forwardfor"


def shell_quoted(value: str) -> str:
    """`value` as any POSIX shell sourcing the env file reads it back, line breaks included
    (double quotes keep them; JSON's escapes would not)."""
    if "\n" not in value:
        return json.dumps(value)
    for special in ("\\", '"', "$", "`"):
        value = value.replace(special, "\\" + special)
    return f'"{value}"'


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run(*argv: str, timeout: float = 60.0, check: bool = True, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, **kw)
    if check and done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv)} failed ({done.returncode}): {(done.stderr or done.stdout)[-1500:]}"
        )
    return done


# ---- nodes ------------------------------------------------------------------------------------
@dataclass
class Node:
    name: str  # head | w1 | w2
    ip: str
    folder: Path  # this node's own disk: data/, ray/ (its /tmp/ray), node.log
    process: subprocess.Popen | None = None
    init_pid: int | None = None  # PID 1 of the node's PID namespace, as the host sees it
    node_id: str | None = None
    stopped: bool = False
    ray_args: list[str] = field(default_factory=list)  # what `ray start` was given (a restart)
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


class Hosts:
    """Three hosts (a head, two workers) stood in for by namespaces on a private bridge, the env
    file they share, and the S3-protocol server on the bridge's host end (with `--store s3`)."""

    def __init__(self, store: str, keep: bool):
        self.store = store
        self.keep = keep
        self.work = Path(tempfile.mkdtemp(prefix=NAME_PREFIX))
        self.nodes = [
            Node("head", f"{SUBNET_PREFIX}.10", self.work / "head"),
            Node("w1", f"{SUBNET_PREFIX}.11", self.work / "w1"),
            Node("w2", f"{SUBNET_PREFIX}.12", self.work / "w2"),
        ]
        self.head = self.nodes[0]
        self.shared_snapshots = self.work / "shared-snapshots"
        self.env_file = self.work / "minisphere.env"
        self.created_dirs: list[Path] = []
        self.moto = None
        self.s3_endpoint: str | None = None

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
        env = {
            "PYTHONPATH": str(ROOT),
            "RAY_SERVE_THROUGHPUT_OPTIMIZED": "1",
            "RAY_SERVE_ENABLE_HA_PROXY": "1",
            "RAY_SERVE_HAPROXY_RETRY_ON": HAPROXY_RETRY_ON_WITH_CLIENT_ADDRESS,
            "MINISPHERE_TRUSTED_PROXIES": f"{SUBNET_PREFIX}.0/{SUBNET_BITS}",
            "PYDANTIC_DISABLE_PLUGINS": "__all__",
            "RAY_event_stats": "0",
            "RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S": "30",
            "MINISPHERE_ADMIN_TOKEN": ADMIN_TOKEN,
            "RAY_USAGE_STATS_ENABLED": "0",
            **ray_auth_env(),
        }
        if s3_endpoint:
            env.update(
                {
                    "MINISPHERE_S3_ENDPOINT_URL": s3_endpoint,
                    "MINISPHERE_S3_ACCESS_KEY_ID": "testing",
                    "MINISPHERE_S3_SECRET_ACCESS_KEY": "testing",
                    "AWS_EC2_METADATA_DISABLED": "true",
                }
            )
        fd = os.open(self.env_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.writelines(f"{name}={shell_quoted(value)}\n" for name, value in env.items())

    def start_s3(self) -> str:
        """An S3-protocol server (moto) on the bridge's host end: reachable from every node."""
        import boto3
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per S3 request
        self.moto = ThreadedMotoServer(ip_address=HOST_END_IP, port=0, verbose=False)
        self.moto.start()
        host, port = self.moto.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        bucket = self.config_env(load_config())["MINISPHERE_S3_BUCKET"]
        boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_bucket(Bucket=bucket)
        return endpoint

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
        return config["applications"][0]["args"]

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


class Cluster(Hosts):
    """Ray on the hosts (the head, two workers), `serve deploy` against the head's dashboard,
    what Ray's state says, and the cleanup that always runs."""

    def __init__(self, store: str, keep: bool):
        super().__init__(store, keep)
        self.findings: dict = {"store": store, "checks": {}, "timings": {}}
        self.url = f"http://{self.head.ip}:{SERVE_PORT}"
        self.dashboard = f"http://{self.head.ip}:{DASHBOARD_PORT}"
        self.admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}

    def run_on_head(self, *argv: str, timeout: float) -> subprocess.CompletedProcess:
        """A command inside the head node's namespaces, as a Ray driver of the cluster."""
        return run(*self.head.inside(*argv), timeout=timeout, env={**os.environ, **ray_auth_env()})

    def start_node(self, node: Node, ray_args: list[str]) -> None:
        node.ray_args, node.init_pid, node.stopped = list(ray_args), None, False
        (node.folder / "data").mkdir(parents=True, exist_ok=True)
        (node.folder / "ray").mkdir(parents=True, exist_ok=True)
        mounts = [(node.folder / "data", DATA_MOUNT), (node.folder / "ray", RAY_TMP_MOUNT)]
        if self.store == "local":  # the one folder all nodes reach, as S3 would be
            (node.folder / "data" / "snapshots").mkdir(exist_ok=True)
            mounts.append((self.shared_snapshots, f"{DATA_MOUNT}/snapshots"))
        script = (
            ["set -e"]
            + [f"mount --bind {q(src)} {q(dst)}" for src, dst in mounts]
            + [
                f"cd {q(ROOT)}",
                "set -a",
                f". {q(self.env_file)}",
                "set +a",
                "exec ray start --block " + " ".join(q(a) for a in ray_args),
            ]
        )
        out = (node.folder / "node.log").open("w")  # closed with the process
        node.process = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                node.netns,
                "unshare",
                "--mount",
                "--pid",
                "--fork",
                "--mount-proc",
                "--propagation",
                "private",
                "sh",
                "-c",
                "\n".join(script),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
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
        self.mount_point(RAY_TMP_MOUNT)  # absent on a machine that never ran Ray before
        if self.store == "local":
            self.shared_snapshots.mkdir(mode=0o700)

        def common(cpus: int) -> list[str]:
            return [
                f"--num-cpus={cpus}",
                f"--metrics-export-port={METRICS_PORT}",
                f"--object-store-memory={OBJECT_STORE_BYTES}",
                "--disable-usage-stats",
            ]

        # the head takes no workloads (as in the RayService): no CPUs, no workspace slots
        self.start_node(
            self.head,
            [
                "--head",
                f"--node-ip-address={self.head.ip}",
                f"--port={GCS_PORT}",
                "--dashboard-host=0.0.0.0",
                f"--dashboard-port={DASHBOARD_PORT}",
                *common(0),
            ],
        )
        self.wait_nodes(1)
        slots = json.dumps({"minisphere_workspace_slots": WORKER_SLOTS})
        for node in self.nodes[1:]:
            self.start_node(
                node,
                [
                    f"--address={self.head.ip}:{GCS_PORT}",
                    f"--node-ip-address={node.ip}",
                    f"--resources={slots}",
                    *common(WORKER_CPUS),
                ],
            )
        alive = self.wait_nodes(len(self.nodes))
        by_ip = {n["node_ip"]: n for n in alive}
        for node in self.nodes:
            node.node_id = by_ip[node.ip]["node_id"]
        self.findings["nodes"] = [
            {
                "name": n.name,
                "ip": n.ip,
                "nodeId": n.node_id[:12],
                "slots": by_ip[n.ip]
                .get("resources_total", {})
                .get("minisphere_workspace_slots", 0),
                "cpus": by_ip[n.ip].get("resources_total", {}).get("CPU", 0),
            }
            for n in self.nodes
        ]

    # ---- the head's REST APIs (dashboard: state and Serve) --------------------------------------
    def state(self, kind: str, **filters) -> list[dict]:
        import httpx

        params = [("limit", "10000"), ("detail", "true")]
        for key, value in filters.items():
            params += [("filter_keys", key), ("filter_predicates", "="), ("filter_values", value)]
        answer = httpx.get(
            f"{self.dashboard}/api/v0/{kind}",
            params=params,
            headers=DASHBOARD_HEADERS,
            timeout=HTTP_TIMEOUT_S,
        ).json()
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
                if (
                    node.process is not None
                    and node.process.poll() is not None
                    and not node.stopped
                ):
                    raise RuntimeError(f"node {node.name} exited: {self.node_log(node)}")
            time.sleep(POLL_S)
        raise TimeoutError(f"cluster: {count} nodes not alive in time ({last})")

    def serve_deploy(self, config_path: Path) -> None:
        run(
            "serve",
            "deploy",
            str(config_path),
            "-a",
            self.dashboard,
            timeout=120,
            cwd=ROOT,
            env={**os.environ, **ray_auth_env()},
        )

    def wait_running(self, timeout: float, replicas: int | None = None) -> dict:
        import httpx

        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                apps = httpx.get(
                    f"{self.dashboard}/api/serve/applications/",
                    headers=DASHBOARD_HEADERS,
                    timeout=HTTP_TIMEOUT_S,
                ).json()["applications"]
                app = apps.get("minisphere") or {}
                last = app.get("status")
                deployment = (app.get("deployments") or {}).get("MiniSphereIngress") or {}
                running = [r for r in deployment.get("replicas", []) if r.get("state") == "RUNNING"]
                if last == "RUNNING" and (replicas is None or len(running) >= replicas):
                    health = httpx.get(f"{self.url}/healthz", timeout=HTTP_TIMEOUT_S)
                    if health.status_code == 200:
                        return {
                            "status": last,
                            "replicas": len(running),
                            "replicaNodes": sorted(self.name_of(r.get("node_id")) for r in running),
                        }
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

    def cleanup(self) -> dict:
        """Every node stopped (`ray stop --force` inside it, then its PID namespace's init
        killed, which takes every process left in it), namespaces and links removed."""
        left = {}
        for node in reversed(self.nodes):
            if (
                node.init_pid is not None
                and node.process is not None
                and node.process.poll() is None
            ):
                with contextlib.suppress(Exception):
                    run(
                        *node.inside("ray", "stop", "--force"),
                        timeout=CLEANUP_STEP_TIMEOUT_S,
                        check=False,
                    )
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
        stale = [
            line
            for line in run("ip", "netns", "list", check=False).stdout.splitlines()
            if line.startswith(NAME_PREFIX)
        ]
        return {
            "leftoverProcessesKilled": left,
            "namespacesLeft": stale,
            "kept": str(self.work) if self.keep else None,
        }


DASHBOARD_HEADERS = {"Authorization": f"Bearer {RAY_AUTH_TOKEN}"}


def ray_auth_env() -> dict[str, str]:
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": RAY_AUTH_TOKEN}


def files_under(root: Path):
    """Every file below `root`; a folder deleted meanwhile (a workspace's, Litestream's) is
    skipped rather than ending the walk."""
    for folder, _, names in os.walk(root):
        for name in names:
            yield Path(folder) / name


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
