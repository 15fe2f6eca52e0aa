"""The faults the soak (fault_soak.py) injects at random into the operator's cluster.

Each fault is a function of the running soak and its random source; it returns a short text of
what it did (kept in the findings) or None when it found no target (nothing is counted then).
Every process is found by its command line among the processes of a node's network namespace,
so a fault never reaches anything outside the cluster it was given.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from operator_cluster import files_under, kill_netns_processes

FREEZE_S = (2.0, 6.0)  # a stopped daemon or raylet: under Ray's health-check bound
S3_DOWN_S = (2.0, 6.0)
NODE_DOWN_S = (3.0, 8.0)  # between a node's kill -9 and its `ray start` again
CORRUPT_BYTES = 4096
LOCK_WAIT_S = 5.0  # for the workload's call on a workspace to end
DAEMON_END_TIMEOUT_S = 30.0  # the tether notices its owner gone, then stops the daemon
NODE_FAULT_AFTERMATH_S = 60.0  # a node's requests in flight end within Serve's request timeout


def processes(soak, node, marker: str) -> list[int]:
    """The pids of a node whose command line holds `marker`."""
    found = []
    for pid in soak.pids_of(node):
        with contextlib.suppress(OSError, ValueError):
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            if marker in command:
                found.append(int(pid))
    return found


def live_workers(soak) -> list:
    return [node for node in soak.nodes[1:] if not node.stopped]


def pick(soak, rng, marker: str, nodes=None) -> tuple | None:
    """A random (node, pid) of the processes holding `marker` on `nodes` (the live workers)."""
    candidates = [
        (node, pid)
        for node in (nodes or live_workers(soak))
        for pid in processes(soak, node, marker)
    ]
    return rng.choice(candidates) if candidates else None


def kill_one(soak, rng, marker: str, nodes=None) -> str | None:
    picked = pick(soak, rng, marker, nodes)
    if picked is None:
        return None
    node, pid = picked
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    return f"{node.name} pid {pid}"


def kill_workspace_actor(soak, rng) -> str | None:
    return kill_one(soak, rng, "ray::WorkspaceActor")


def kill_directory(soak, rng) -> str | None:
    return kill_one(
        soak, rng, "ray::DirectoryActor", nodes=[n for n in soak.nodes if not n.stopped]
    )


def kill_daemon(soak, rng) -> str | None:
    return kill_one(soak, rng, "litestream")


def freeze(soak, rng, marker: str) -> str | None:
    picked = pick(soak, rng, marker)
    if picked is None:
        return None
    node, pid = picked
    seconds = rng.uniform(*FREEZE_S)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    return f"{node.name} pid {pid} for {seconds:.1f} s"


def stop_daemon(soak, rng) -> str | None:
    return freeze(soak, rng, "litestream")


def stop_raylet(soak, rng) -> str | None:
    return freeze(soak, rng, "/raylet ")


def restart_s3(soak, rng) -> str | None:
    seconds = rng.uniform(*S3_DOWN_S)
    soak.stop_s3()
    try:
        time.sleep(seconds)
    finally:
        soak.start_s3_again()
    return f"down {seconds:.1f} s"


def corrupt_copy(soak, rng) -> str | None:
    """A hibernated workspace's local file overwritten or cut short on its node's disk. The
    tenant's lock is held throughout, so no call of the workload wakes it meanwhile."""
    tenants = [t for t in soak.tenants if not t.suspended]
    if not tenants:
        return None
    tenant = rng.choice(tenants)
    if not tenant.lock.acquire(timeout=LOCK_WAIT_S):  # in a long call: another time
        return None
    try:
        return corrupt_hibernated(soak, rng, tenant)
    finally:
        tenant.lock.release()


def corrupt_hibernated(soak, rng, tenant) -> str | None:
    if not soak.admin_call(soak.fault_http, "POST", f"/v1/workspaces/{tenant.id}/hibernate"):
        return None
    files = [
        path
        for node in soak.nodes
        for path in files_under(node.folder / "data")
        if path.name == "workspace.db" and tenant.id in path.parts
    ]
    if not files:
        return None
    path = rng.choice(files)
    how = rng.choice(["garbage", "truncated"])
    with contextlib.suppress(OSError):
        if how == "garbage":
            with path.open("r+b") as handle:
                handle.write(rng.randbytes(CORRUPT_BYTES))
        else:
            os.truncate(path, path.stat().st_size // 2)
    return f"{tenant.id} {how} ({path.parent.name})"


def kill_node(soak, rng) -> str | None:
    """Every process of one worker killed (raylet, daemon, actors), then the node started
    again on the same disk after a pause."""
    node = spare_worker(soak, rng)
    if node is None:
        return None
    node_fault(soak)
    killed = kill_netns_processes(node.netns)
    return f"{node.name}: {killed} processes, {restart(soak, rng, node)}"


def kill_raylet(soak, rng) -> str | None:
    """A worker's raylet killed alone: the node's replication daemon must end with it (a
    daemon left behind would keep shipping files whose workspaces move elsewhere)."""
    node = spare_worker(soak, rng)
    raylets = processes(soak, node, "/raylet ") if node else []
    if not raylets:
        return None
    node_fault(soak)
    with contextlib.suppress(ProcessLookupError):
        os.kill(raylets[0], signal.SIGKILL)
    deadline = time.monotonic() + DAEMON_END_TIMEOUT_S
    while (left := processes(soak, node, "litestream")) and time.monotonic() < deadline:
        time.sleep(0.5)
    if left:
        soak.violation("a replication daemon outlived its node's raylet", node=node.name, pids=left)
    kill_netns_processes(node.netns)  # the workers Ray would reap on a real host
    return f"{node.name}: daemon {'left' if left else 'ended'}, {restart(soak, rng, node)}"


def node_fault(soak) -> None:
    """From now until a while after the node is back, Serve's proxy may answer a bare 500 for
    a request whose ingress replica was on it."""
    soak.node_fault_until = time.monotonic() + NODE_FAULT_AFTERMATH_S


def spare_worker(soak, rng):
    """A worker that may be lost: one other stays for the workspaces to move to."""
    workers = live_workers(soak)
    return rng.choice(workers) if len(workers) >= 2 else None


def restart(soak, rng, node) -> str:
    node.stopped = True
    seconds = rng.uniform(*NODE_DOWN_S)
    time.sleep(seconds)
    soak.start_node(node, node.ray_args)
    alive = soak.wait_nodes(len(soak.nodes))
    node.node_id = next(n["node_id"] for n in alive if n["node_ip"] == node.ip)
    node_fault(soak)  # the aftermath counts from its return
    return f"back after {seconds:.1f} s"


FAULTS = {
    "kill -9 workspace actor": (kill_workspace_actor, 5),
    "kill -9 directory": (kill_directory, 2),
    "kill -9 litestream": (kill_daemon, 2),
    "SIGSTOP litestream": (stop_daemon, 2),
    "SIGSTOP raylet": (stop_raylet, 2),
    "S3 server restarted": (restart_s3, 2),
    "local copy corrupted": (corrupt_copy, 2),
    "kill -9 whole node": (kill_node, 1),
    "kill -9 raylet": (kill_raylet, 1),
}
