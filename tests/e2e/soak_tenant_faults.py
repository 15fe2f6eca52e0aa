"""Faults of the fault soak (fault_soak.py) aimed at one tenant's workspace:

- its actor stopped (SIGSTOP) for longer than the directory's liveness bound: the directory must
  end it within that bound, and the workspace's next calls wake it elsewhere;
- one tenant holding many requests open at the ingress (request bodies that never finish
  arriving) and opening MCP `GET` streams: every other tenant's calls must still be answered,
  and the `GET`s refused at once;
- a forget on a workspace of several megabytes, with the S3 server stopped and the workspace's
  node killed right after it was sent: acknowledged or not, the forgotten text must end up in
  no file and no stored object once the forget is answered (the workload's keyed retry).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from operator_cluster import kill_netns_processes
from soak_faults import LOCK_WAIT_S, node_fault, restart
from soak_workload import keyed, new_text

# the directory's liveness bound (minisphere.directory.liveness.HUNG_AFTER_S), its sweep
# (IDLE_SWEEP_S) and a busy machine's margin: the stopped actor must be gone by then
HUNG_AFTER_S = 30.0
HUNG_ENDED_WITHIN_S = HUNG_AFTER_S + 30.0
HELD_REQUESTS = 160  # more than one workspace's share of an ingress replica (112 of 448)
HOLD_S = 12.0
OTHERS_ANSWER_WITHIN_S = 30.0
MCP_GETS = 4
LARGE_ENTRIES = 48  # of LARGE_ENTRY_BYTES each: a first upload of a few megabytes
LARGE_ENTRY_BYTES = 60_000
FORGET_ANSWER_WAIT_S = 400.0  # the forget's own retries end by then (RETRY_DEADLINE_S and more)
ACTOR_DRIVER = """
import json, sys, ray
ray.init(address="auto", namespace=sys.argv[1], logging_level="ERROR", log_to_driver=False)
# by name: a handle found by name takes no positional arguments (Ray's traced signature)
handle = ray.get(ray.get_actor("directory").activate.remote(workspace_id=sys.argv[2]), timeout=60)
print(json.dumps(ray.get(handle.ready.remote(), timeout=60)))
"""


# ---- the large workspace ---------------------------------------------------------------------
def fill_large(soak, http, tenant) -> None:
    """The tenant's workspace made large (keyed captures, in its model) before the faults."""
    for _ in range(LARGE_ENTRIES):
        nonce, text = new_text(soak.fill_rng, tenant, "bulk")
        filler = ("lorem ipsum " * (LARGE_ENTRY_BYTES // 12))[:LARGE_ENTRY_BYTES]
        text = text.replace(f" {nonce}", f" {filler} {nonce}")
        tenant.written.add(nonce)
        answer = keyed(soak, http, soak.fill_rng, tenant, "capture", {"content": text})
        if answer is not None:
            tenant.entries[answer["id"]] = [text]


def forget_large_then_lose_node(soak, rng) -> str | None:
    """A forget sent on the large workspace; right after, S3 stopped and the workspace's node
    killed; both back after a pause. The forget's keyed retries then find it applied or apply
    it, and the final scan looks for its text everywhere."""
    tenant = soak.tenants[0]
    if tenant.suspended or not tenant.lock.acquire(timeout=LOCK_WAIT_S):
        soak.fault_log.append(f"large forget skipped: {tenant.id} suspended or busy")
        return None
    try:
        # awake, so its record names the node it runs on now (not one that restarted since)
        soak.call(soak.fault_http, tenant, "getCount", {})
        node = node_of(soak, tenant)
        workers = [n for n in soak.nodes[1:] if not n.stopped]
        if node is None or len(workers) < 2 or not tenant.entries:
            soak.fault_log.append(
                f"large forget skipped: node {node and node.name}, {len(workers)} workers, "
                f"{len(tenant.entries)} entries"
            )
            return None
        entry = max(tenant.entries, key=lambda e: len(tenant.entries[e][-1]))
        answered: list = []
        sender = threading.Thread(
            target=lambda: answered.append(
                keyed(soak, soak.fault_http, rng, tenant, "forget", {"id": entry})
            ),
            daemon=True,
        )
        sender.start()
        time.sleep(rng.uniform(0.0, 0.3))
        s3_down = rng.random() < 0.5
        if s3_down:
            soak.stop_s3()
        node_fault(soak)
        killed = kill_netns_processes(node.netns)
        try:
            back = restart(soak, rng, node)
        finally:
            if s3_down:
                soak.start_s3_again()
        sender.join(FORGET_ANSWER_WAIT_S)
        if answered and answered[0] is not None:
            soak.forget_texts(tenant.entries.pop(entry), f"forgotten in {tenant.id}")
            tenant.edges = {e for e in tenant.edges if entry not in e[:2]}
            how = "acknowledged"
        else:  # left to the keyed retry at the end (the workload's `resolve`)
            how = "unanswered, retried at the end"
        s3 = "S3 down, " if s3_down else ""
        return f"{tenant.id} on {node.name}: {s3}{killed} processes, {back}; forget {how}"
    finally:
        tenant.lock.release()


def node_of(soak, tenant):
    answer = soak.admin_call(soak.fault_http, "GET", f"/v1/workspaces/{tenant.id}")
    return node_with_id(soak, answer.json().get("nodeId") if answer is not None else None)


def node_with_id(soak, node_id: str | None):
    """The worker a Ray node id names, by its address: a node started again has a new id,
    and the one recorded when it came back may be its old self, not yet seen dead."""
    addresses = {n["node_id"]: n["node_ip"] for n in soak.state("nodes")}
    address = addresses.get(node_id) if node_id else None
    return next((n for n in soak.nodes[1:] if n.ip == address and not n.stopped), None)


# ---- a hung actor ----------------------------------------------------------------------------
def stop_actor_past_liveness(soak, rng) -> str | None:
    """A resident workspace's actor stopped until the directory ends it (or the bound passes:
    a violation). Its tenant's calls meanwhile go unanswered and are sent again."""
    tenant = rng.choice([t for t in soak.tenants if not t.suspended] or [None])
    if tenant is None:
        return None
    found = actor_process(soak, tenant)
    if found is None:
        return None
    node, pid = found
    stopped_at = time.monotonic()
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGSTOP)
    try:
        while alive(pid) and time.monotonic() - stopped_at < HUNG_ENDED_WITHIN_S:
            time.sleep(1.0)
    finally:
        left = alive(pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    took = time.monotonic() - stopped_at
    if left:
        soak.violation(
            "a hung actor left in place past the liveness bound",
            tenant=tenant.id,
            node=node.name,
            stoppedS=round(took, 1),
        )
    return f"{tenant.id} on {node.name}: {'LEFT' if left else 'ended'} after {took:.0f} s"


def actor_process(soak, tenant) -> tuple | None:
    """(node, host pid) of the actor serving the tenant's workspace (woken if it slept)."""
    done = soak.run_on_head(
        sys.executable, "-c", ACTOR_DRIVER, soak.namespace, tenant.id, timeout=120
    )
    try:
        ready = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    if ready.get("bound") != tenant.id or not ready.get("serving"):
        return None
    node = node_with_id(soak, ready["nodeId"])
    if node is None:
        return None
    for pid in soak.pids_of(node):  # its pid inside the node's PID namespace is the last
        with contextlib.suppress(OSError, ValueError):
            status = Path(f"/proc/{pid}/status").read_text()
            nspid = next(line for line in status.splitlines() if line.startswith("NSpid:"))
            if int(nspid.split()[-1]) == ready["pid"]:
                return node, int(pid)
    return None


def alive(pid: int) -> bool:
    """Not ended: a killed process that is still a zombie counts as ended."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


# ---- one tenant holding the ingress ----------------------------------------------------------
def hold_requests(soak, rng) -> str | None:
    """One tenant's requests held open (bodies that never finish) and its MCP `GET`s, while
    every other tenant's `getCount` must be answered."""
    if time.monotonic() < soak.node_fault_until:
        return None  # a node's aftermath answers 503s of its own
    holder, *others = rng.sample(soak.tenants, len(soak.tenants))
    # first: once the holder's share is spent, its GETs are refused for that (503) instead
    gets = [mcp_get(soak, holder) for _ in range(MCP_GETS)]
    if any(status != 405 for status in gets):
        soak.violation("an MCP GET not refused at once", tenant=holder.id, statuses=gets)
    host, port = soak.url.split("//")[1].split(":")
    held = open_held(holder, host, int(port))
    try:
        time.sleep(HOLD_S / 2)
        late = [t.id for t in others if answered_soon(soak, t) is False]
        if late:
            soak.violation(
                "a tenant's calls unanswered while another held the ingress",
                holder=holder.id,
                unanswered=late,
                held=len(held),
            )
    finally:
        for sock in held:
            with contextlib.suppress(OSError):
                sock.close()
    return f"{holder.id} held {len(held)} requests; {len(others)} others answered"


def open_held(tenant, host: str, port: int) -> list[socket.socket]:
    head = (
        f"POST /v1/w/{tenant.id}/capture HTTP/1.1\r\nHost: {host}\r\n"
        f"Authorization: Bearer {tenant.token}\r\nContent-Type: application/json\r\n"
        "Content-Length: 100000\r\n\r\n" + '{"content": "'
    ).encode()
    held: list[socket.socket] = []
    deadline = time.monotonic() + HOLD_S
    while len(held) < HELD_REQUESTS and time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            sock = socket.create_connection((host, port), timeout=5)
            sock.sendall(head)
            held.append(sock)
    return held


def mcp_get(soak, tenant) -> int | None:
    import httpx

    try:
        answer = soak.fault_http.get(
            f"/v1/w/{tenant.id}/mcp",
            headers={"Authorization": f"Bearer {tenant.token}", "Accept": "text/event-stream"},
            timeout=10,
        )
    except httpx.HTTPError:
        return None
    return answer.status_code


def answered_soon(soak, tenant) -> bool | None:
    """A `getCount` of the tenant answered 200 within the bound (a 503 may come while its
    workspace wakes: then it is asked again). None: not asked, its workload holds it (a
    delete and create changes its token) or it is suspended."""
    if tenant.suspended or not tenant.lock.acquire(timeout=LOCK_WAIT_S):
        return None
    try:
        return ask_count(soak, tenant)
    finally:
        tenant.lock.release()


def ask_count(soak, tenant) -> bool:
    import httpx

    deadline = time.monotonic() + OTHERS_ANSWER_WITHIN_S
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            answer = soak.fault_http.post(
                f"/v1/w/{tenant.id}/getCount",
                headers={"Authorization": f"Bearer {tenant.token}"},
                json={},
                timeout=OTHERS_ANSWER_WITHIN_S,
            )
            if answer.status_code == 200:
                return True
        time.sleep(0.5)
    return False


TENANT_FAULTS = {
    "SIGSTOP workspace actor past the liveness bound": (stop_actor_past_liveness, 1),
    "one tenant holds the ingress": (hold_requests, 2),
    "forget on a large workspace then node lost": (forget_large_then_lose_node, 1),
}
