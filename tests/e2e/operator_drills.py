"""The operator scenario's drills: what a workspace's data does when the cluster around it moves,
fails or forgets, on the scenario's namespace hosts (each node with its own disk).

Each drill is a function of the running `Scenario` (operator_scenario.py) and an HTTP client on
the head's proxy; it records its figures under `findings` and its verdicts through
`scenario.check`. They need nothing but the cluster, the service's HTTP API and, for the slot
drill, a short Ray driver run inside the head's namespaces.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import sys
import threading
import time
import uuid
from pathlib import Path

SWEEP_TIMEOUT_S = 60.0  # for every node to delete a deleted workspace's copy
FREEZE_LIMIT_S = 8.0  # a node stopped (SIGSTOP) at most this long: under Ray's health
#                                 check's failure bound (5 missed checks 3 s apart), so the
#                                 cluster does not count it dead
RACE_ATTEMPTS = 3  # a wake that did not wait on the stopped node is no race: again
RACE_POLL_S = 0.05
S3_OUTAGE_WRITES = 5
DRILL_HTTP_TIMEOUT_S = 60.0  # a held-up wake or delete, an unconfirmable write: well within
S3_RETURN_TIMEOUT_S = 90.0
SLOT_RESOURCE = "minisphere_workspace_slots"
HOLDER_TIMEOUT_S = 90.0
HOLDER_SETTLE_S = 3.0  # slots freed by hibernations show in Ray's view within this
HOLDER_SETTLE_LIMIT_S = 20.0
MOMENT_MARGIN_S = 2.2

# A Ray driver run inside the head's namespaces: hold every free workspace slot of one node with
# a detached placeholder actor (so the directory sees that node full), or let them go.
SLOT_HOLDER_DRIVER = f"""
import json, sys, time, ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
ray.init(address="auto", namespace="operator-drills", logging_level="ERROR",
         log_to_driver=False)
verb, *args = sys.argv[1:]
if verb == "hold":
    # every free slot now, and those that hibernations still under way free in the next
    # seconds (Ray's resource view shows a killed actor's slot a moment later)
    node_id, prefix = args
    @ray.remote(num_cpus=0)
    class SlotHolder:
        def ready(self):
            return True
    held, names, quiet_since, started = 0, [], time.monotonic(), time.monotonic()
    while time.monotonic() - quiet_since < {HOLDER_SETTLE_S} and \
            time.monotonic() - started < {HOLDER_SETTLE_LIMIT_S}:
        free = ray._private.state.available_resources_per_node().get(node_id, {{}}).get(
            "{SLOT_RESOURCE}", 0)
        if free >= 1:
            names.append(f"{{prefix}}-{{len(names)}}")
            holder = SlotHolder.options(
                name=names[-1], lifetime="detached", resources={{"{SLOT_RESOURCE}": free}},
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)).remote()
            ray.get(holder.ready.remote(), timeout={HOLDER_TIMEOUT_S})
            held += free
            quiet_since = time.monotonic()
        time.sleep(0.2)
    print(json.dumps({{"held": held, "names": names}}))
else:
    for name in args:
        try:
            ray.kill(ray.get_actor(name))
        except ValueError:
            pass
    print(json.dumps({{"released": args}}))
"""


# ---- small steps ----------------------------------------------------------------------------------
def record(sc, http, workspace_id: str) -> dict:
    return sc.admin_step(http, "GET", f"/v1/workspaces/{workspace_id}").json()


def node_of(sc, http, workspace_id: str) -> str:
    return sc.name_of(record(sc, http, workspace_id).get("nodeId"))


def standing(sc, http, workspace_id: str, headers: dict) -> dict:
    """Where the workspace runs, where its copy came from, and how many entries it holds."""
    found = record(sc, http, workspace_id)
    activation = (found.get("durability") or {}).get("activation") or {}
    return {
        "node": sc.name_of(found.get("nodeId")),
        "source": activation.get("source"),
        "count": count_of(sc, http, workspace_id, headers),
    }


def hibernate(sc, http, workspace_id: str) -> None:
    sc.admin_step(http, "POST", f"/v1/workspaces/{workspace_id}/hibernate")


def hibernate_all_on(sc, http, node_name: str) -> list[str]:
    """Hibernate every resident workspace of one node (nothing there left to evict)."""
    listed = sc.admin_step(http, "GET", "/v1/workspaces").json()["items"]
    there = [item["id"] for item in listed if sc.name_of(item.get("nodeId")) == node_name]
    for workspace_id in there:
        hibernate(sc, http, workspace_id)
    return there


def keyed_capture(
    sc, http, workspace_id: str, headers: dict, text: str, deadline_s: float = 120.0
) -> str:
    token = headers["Authorization"].split(" ", 1)[1]
    answer = sc.call(
        http,
        workspace_id,
        token,
        "capture",
        {"content": text},
        key=uuid.uuid4().hex,
        deadline=time.monotonic() + deadline_s,
    )
    if answer.status_code != 200:
        raise RuntimeError(f"capture on {workspace_id}: {answer.status_code} {answer.text[:300]}")
    return answer.json()["id"]


def count_of(sc, http, workspace_id: str, headers: dict) -> int:
    token = headers["Authorization"].split(" ", 1)[1]
    answer = sc.call(http, workspace_id, token, "getCount", {}, deadline=time.monotonic() + 120.0)
    return answer.json()["count"]


def slot_holders(sc, verb: str, *args: str) -> dict:
    done = sc.run_on_head(
        sys.executable, "-c", SLOT_HOLDER_DRIVER, verb, *args, timeout=HOLDER_TIMEOUT_S + 30
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def hold_slots(sc, node_name: str, holders: list[str]) -> float:
    """Hold every free workspace slot of a node (the placeholders' names join `holders`)."""
    node = next(n for n in sc.nodes if n.name == node_name)
    held = slot_holders(sc, "hold", node.node_id, f"hold-{node_name}-{len(holders)}")
    holders.extend(held["names"])
    return held["held"]


def workspace_hosting_pids(sc, node) -> list[int]:
    """A node's raylet (it starts new actors) and its workspace actor and idle worker processes
    (spares, and workers a new actor would take): not its ingress replica, not the directory."""
    chosen = []
    for pid in sc.pids_of(node):
        with contextlib.suppress(OSError):
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            if "/raylet " in command or command.startswith(("ray::WorkspaceActor", "ray::IDLE")):
                chosen.append(int(pid))
    return chosen


@contextlib.contextmanager
def frozen(pids: list[int]):
    """These processes stopped (SIGSTOP) while inside, resumed on leaving."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def until(condition, deadline: float) -> bool:
    """Poll `condition` until it holds (True) or the monotonic `deadline` passes (False)."""
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(RACE_POLL_S)
    return True


def gone_everywhere(sc, secret: str) -> list[str]:
    """Wait (up to the node sweeps' bound) until no node's file and no stored object holds
    `secret`; what still holds it then."""
    gone_by = time.monotonic() + SWEEP_TIMEOUT_S
    while (held := sc.holding(secret)) and time.monotonic() < gone_by:
        time.sleep(0.5)
    return held


# ---- forget and delete ------------------------------------------------------------------------------
def forget_drill(sc, http) -> None:
    """One secret through capture, a keyed update, a snapshot, a restore, forget, an export
    and a prune: afterwards it is in no file of any node and in no stored object."""
    secret = f"forget-drill passphrase {uuid.uuid4().hex}"
    workspace_id, headers = sc.new_drill_workspace(http, "forget")
    entry = sc.drill(http, workspace_id, headers, "capture", {"content": "a harmless note"})["id"]
    sc.drill(
        http,
        workspace_id,
        headers,
        "update",
        {"id": entry, "content": secret},
        key=uuid.uuid4().hex,
    )
    base = f"/v1/workspaces/{workspace_id}"
    version = sc.admin_step(http, "POST", f"{base}/snapshot").json()["version"]
    sc.admin_step(http, "POST", f"{base}/restore", json={"version": version})
    before = sc.holding(secret)
    sc.drill(http, workspace_id, headers, "forget", {"id": entry})
    sc.admin_step(http, "GET", f"{base}/export")
    sc.admin_step(http, "POST", f"{base}/snapshots/prune", json={"keep": 1})
    # sync mode answers a forget once the replica's history holds no trace of it; async mode
    # answers at the commit and starts the history over right after, within the sweep's bound
    after = sc.holding(secret) if sc.replication == "sync" else gone_everywhere(sc, secret)
    sc.findings["forgetDrill"] = {"heldBefore": len(before), "heldAfter": after}
    sc.check(
        "a forgotten secret is in no node's file and no stored object",
        bool(before) and not after,
        after,
    )


def delete_drill(sc, http) -> None:
    """A workspace deleted while its file sits on a worker's disk, then created again with the
    same id: the new tenant starts empty and the old content is nowhere."""
    secret = f"delete-drill launch code {uuid.uuid4().hex}"
    workspace_id, headers = sc.new_drill_workspace(http, "delete")
    sc.drill(http, workspace_id, headers, "capture", {"content": secret})
    hibernate(sc, http, workspace_id)  # its file stays on the worker
    node = node_of(sc, http, workspace_id)
    before = sc.holding(secret)
    sc.admin_step(http, "DELETE", f"/v1/workspaces/{workspace_id}")
    after = gone_everywhere(sc, secret)
    again = recreate(sc, http, workspace_id)
    count = sc.drill(http, workspace_id, again, "getCount", {})["count"]
    recalled = sc.drill(http, workspace_id, again, "recall", {"query": "launch code"})
    sc.findings["deleteDrill"] = {
        "node": node,
        "heldBefore": before,
        "heldAfter": after,
        "recreatedCount": count,
    }
    sc.check(
        "a deleted workspace leaves no byte on any node or in the store",
        any(h.startswith(node) for h in before) and not after,
        after,
    )
    sc.check("the id created again starts empty", count == 0 and not recalled["items"], count)


def recreate(sc, http, workspace_id: str) -> dict:
    made = http.post("/v1/workspaces", json={"id": workspace_id}, headers=sc.admin)
    if made.status_code != 201:
        raise RuntimeError(f"create {workspace_id} again: {made.status_code} {made.text[:300]}")
    return {"Authorization": f"Bearer {made.json()['token']}"}


def delete_racing_wake_drill(sc, http) -> None:
    """A wake of a hibernated workspace held up on its node (the processes that would host it
    stopped), and the workspace deleted while the directory is binding it: the delete wins, the
    wake is refused, no actor of the deleted generation serves anything, and the id created
    again starts empty with the old content on no disk and in no stored object.

    The race is set up by watching, not by a head start: the delete is sent once the location
    record shows the bind under way (its epoch moved) and the node is let go once the record
    shows the delete under way. A wake that got a process the stop did not reach answers
    before that and is no race; the drill then tries again with a new workspace."""
    attempts = []
    for _ in range(RACE_ATTEMPTS):
        attempts.append(race_once(sc, http))
        if attempts[-1]["raced"]:
            break
    last = attempts[-1]
    sc.findings["raceDrill"] = {"attempts": attempts}
    sc.check(
        "a delete racing a wake wins: deleted, the wake refused",
        last["raced"] and last.get("delete") == 200 and last.get("wake") == 404,
        attempts,
    )
    held = [a["heldAfter"] for a in attempts]
    sc.check("after a delete raced a wake no byte of it is left anywhere", not any(held), held)
    counts = [a["recreatedCount"] for a in attempts]
    sc.check("the id created again after the race starts empty", not any(counts), counts)


def send_in_thread(url: str, answers: dict, name: str, verb: str, path: str, **kw):
    """Send one request from a thread of its own; its status lands in `answers[name]`."""
    import httpx

    def run() -> None:
        with httpx.Client(base_url=url, timeout=DRILL_HTTP_TIMEOUT_S) as client:
            answers[name] = client.request(verb, path, **kw).status_code

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def race_once(sc, http) -> dict:
    """One wake and one delete of a new hibernated workspace, interleaved as the drill says;
    what each answered, whether they really raced, and what was left afterwards."""
    secret = f"race-drill vault combination {uuid.uuid4().hex}"
    workspace_id, headers = sc.new_drill_workspace(http, "race")
    sc.drill(http, workspace_id, headers, "capture", {"content": secret})
    hibernate(sc, http, workspace_id)
    node_name = node_of(sc, http, workspace_id)
    node = next(n for n in sc.nodes if n.name == node_name)
    epoch = record(sc, http, workspace_id)["location"]["epoch"]
    answers: dict = {}

    def send(name: str, verb: str, path: str, **kw) -> threading.Thread:
        return send_in_thread(sc.url, answers, name, verb, path, **kw)

    def observed(field):
        answer = http.get(f"/v1/workspaces/{workspace_id}", headers=sc.admin)
        return field(answer.json()) if answer.status_code == 200 else None

    held_up = workspace_hosting_pids(sc, node)
    with frozen(held_up):
        deadline = time.monotonic() + FREEZE_LIMIT_S
        waker = send(
            "wake",
            "POST",
            f"/v1/w/{workspace_id}/capture",
            headers={**headers, "Idempotency-Key": uuid.uuid4().hex},
            json={"content": "written by the wake that raced the delete"},
        )
        binding = until(
            lambda: "wake" in answers or (observed(lambda r: r["location"]["epoch"]) or 0) > epoch,
            deadline,
        )
        binding = binding and "wake" not in answers
        deleter = send("delete", "DELETE", f"/v1/workspaces/{workspace_id}", headers=sc.admin)
        deleting = binding and until(
            lambda: "wake" in answers or observed(lambda r: r["state"]) == "deleting", deadline
        )
        raced = deleting and "wake" not in answers
    waker.join(DRILL_HTTP_TIMEOUT_S)
    deleter.join(DRILL_HTTP_TIMEOUT_S)
    after = gone_everywhere(sc, secret)
    again = recreate(sc, http, workspace_id)
    count = sc.drill(http, workspace_id, again, "getCount", {})["count"]
    return {
        "node": node_name,
        "frozen": len(held_up),
        "raced": raced,
        "bindSeenHeldUp": binding,
        **answers,
        "heldAfter": after,
        "recreatedCount": count,
    }


# ---- a full node --------------------------------------------------------------------------------
def full_node_drill(sc, http) -> None:
    """A workspace whose file's node has no free slot. First with idle residents there: one
    of them is hibernated to make room and the workspace wakes where its file is. Then with
    nothing there to evict: it moves to the other worker, restored with every acknowledged
    write. Then the other worker full too and it goes back: the copy left on its first node is
    older than the newest state and must not be opened."""
    workspace_id, headers = sc.new_drill_workspace(http, "full")
    written = [
        keyed_capture(sc, http, workspace_id, headers, f"full-node write {n}") for n in range(3)
    ]
    home = node_of(sc, http, workspace_id)
    other = next(n.name for n in sc.nodes[1:] if n.name != home)
    holders: list[str] = []
    report: dict = {"home": home}
    try:
        hibernate(sc, http, workspace_id)
        report["heldAtHome"] = hold_slots(sc, home, holders)
        written.append(keyed_capture(sc, http, workspace_id, headers, "woken on a full node"))
        report["evicted"] = standing(sc, http, workspace_id, headers)
        sc.check(
            "a wake on a full node makes room there: same node, every write kept",
            report["evicted"]["node"] == home and report["evicted"]["count"] == len(written),
            report["evicted"],
        )

        hibernate_all_on(sc, http, home)
        hold_slots(sc, home, holders)
        written.append(keyed_capture(sc, http, workspace_id, headers, "moved off a full node"))
        written.append(keyed_capture(sc, http, workspace_id, headers, "written after the move"))
        report["moved"] = standing(sc, http, workspace_id, headers)
        sc.check(
            "nothing to evict on the full node: moved, every acknowledged write kept",
            report["moved"]["node"] == other and report["moved"]["count"] == len(written),
            report["moved"],
        )

        slot_holders(sc, "release", *holders)
        holders.clear()
        hibernate_all_on(sc, http, other)
        hold_slots(sc, other, holders)
        written.append(keyed_capture(sc, http, workspace_id, headers, "moved back home"))
        report["back"] = standing(sc, http, workspace_id, headers)
        sc.check(
            "moved back: the newest state, not the older copy left on the node",
            report["back"]["node"] == home
            and report["back"]["source"] != "local"
            and report["back"]["count"] == len(written),
            report["back"],
        )
    finally:
        if holders:
            slot_holders(sc, "release", *holders)
        sc.findings["fullNodeDrill"] = report


# ---- replication ----------------------------------------------------------------------------------
def restore_to_moment_drill(sc, http) -> None:
    """Two writes a few seconds apart; a restore to a second between them brings back exactly
    the first."""
    workspace_id, headers = sc.new_drill_workspace(http, "moment")
    first = keyed_capture(sc, http, workspace_id, headers, "written before the moment")
    # whole seconds on both sides: in async mode Litestream ships (and timestamps) a write up
    # to its sync interval (1 s) after it was answered
    time.sleep(MOMENT_MARGIN_S)
    moment = dt.datetime.now(dt.UTC).replace(microsecond=0)
    time.sleep(MOMENT_MARGIN_S)
    keyed_capture(sc, http, workspace_id, headers, "written after the moment")
    deadline = time.monotonic() + 60
    while True:  # in async mode the replica may not hold the later write for a second
        restored = http.post(
            f"/v1/workspaces/{workspace_id}/restore-to-moment",
            json={"timestamp": moment.strftime("%Y-%m-%dT%H:%M:%SZ")},
            headers=sc.admin,
        )
        if restored.status_code != 503 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    listed = sc.drill(http, workspace_id, headers, "listRecent", {"n": 10})["items"]
    ids = [item["id"] for item in listed]
    sc.findings["momentDrill"] = {"status": restored.status_code, "ids": ids}
    sc.check(
        "a restore to a moment between two writes brings back exactly the first",
        restored.status_code == 200 and ids == [first],
        (restored.status_code, ids),
    )


def writes_while_s3_is_down(sc, target: str, token: str, bodies: list, keys: list):
    """Send the keyed writes at once with the S3 server stopped, then start it again; each
    write's status (or the transport error's name), its error code, and how long S3 was down."""
    import httpx

    statuses: list[int | str] = [0] * len(bodies)
    codes: list[str] = [""] * len(bodies)

    def send(n: int) -> None:
        with httpx.Client(base_url=sc.url, timeout=DRILL_HTTP_TIMEOUT_S) as client:
            try:
                answer = client.post(
                    f"/v1/w/{target}/capture",
                    json=bodies[n],
                    headers={"Authorization": f"Bearer {token}", "Idempotency-Key": keys[n]},
                )
            except httpx.HTTPError as exc:
                statuses[n] = exc.__class__.__name__
                return
            statuses[n] = answer.status_code
            with contextlib.suppress(ValueError, KeyError, TypeError):
                codes[n] = answer.json()["error"]["code"]

    started = time.monotonic()
    sc.stop_s3()
    try:
        senders = [threading.Thread(target=send, args=(n,)) for n in range(len(bodies))]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join(DRILL_HTTP_TIMEOUT_S + 5)
    finally:
        outage_s = time.monotonic() - started
        sc.start_s3_again()
    return statuses, codes, outage_s


def s3_outage_drill(sc, http, workspaces: dict, target: str) -> None:
    """The S3-protocol server stopped while keyed writes arrive (sync replication): each is
    answered 503, none 200, none 5xx of another kind; once the server is back, the same writes
    sent again (same keys) are acknowledged once each, and they join the writes the worker-kill
    drill checks after restoring from the replica."""
    ws = workspaces[target]
    keys = [uuid.uuid4().hex for _ in range(S3_OUTAGE_WRITES)]
    bodies = [
        {"content": f"written while S3 was down {n} {uuid.uuid4().hex}"}
        for n in range(S3_OUTAGE_WRITES)
    ]
    statuses, codes, outage_s = writes_while_s3_is_down(sc, target, ws["token"], bodies, keys)
    deadline = time.monotonic() + S3_RETURN_TIMEOUT_S
    acknowledged = []
    for key, body in zip(keys, bodies):
        answer = sc.call(http, target, ws["token"], "capture", body, key=key, deadline=deadline)
        if answer.status_code == 200:
            acknowledged.append(answer.json()["id"])
    ws["late"].extend(acknowledged)
    sc.findings["s3OutageDrill"] = {
        "workspace": target,
        "during": statuses,
        "codes": codes,
        "outageS": round(outage_s, 1),
        "acknowledgedAfter": len(acknowledged),
    }
    sc.check(
        "S3 stopped: sync writes answer 503, none acknowledged",
        all(status == 503 for status in statuses),
        list(zip(statuses, codes)),
    )
    sc.check(
        "S3 back: the same keyed writes acknowledged once each",
        len(set(acknowledged)) == S3_OUTAGE_WRITES,
        acknowledged,
    )
