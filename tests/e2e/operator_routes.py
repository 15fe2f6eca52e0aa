"""The operator scenario's black-box route checks, through the head's proxy: workspaces made and
written, read back, kept apart, and served by actors Ray starts without its runtime-env shim.

With RAY_SERVE_THROUGHPUT_OPTIMIZED=1 (the env file, as infra/README.md asks) Ray 2.60 runs one
HTTP proxy, on the head, whatever proxy_location says; the workers' replicas take requests from
it, so a worker's own port answers nothing."""

from __future__ import annotations

import time
import uuid

# this file's folder: the scenario runs as a script
from operator_cluster import DEPLOY_TIMEOUT_S, HTTP_TIMEOUT_S, SERVE_PORT

WORKSPACES = 6
WRITES_PER_WORKSPACE = 8  # acknowledged and snapshotted before the worker stops


def route_checks(sc, http) -> dict:
    """Every check of this step; the workspaces made, each with its token and written ids."""
    proxies_and_refusals(sc, http)
    workspaces = made_and_written(sc, http)
    reads_and_isolation(sc, http, workspaces)
    no_runtime_env_shim(sc)
    return workspaces


def proxies_and_refusals(sc, http) -> None:
    import httpx

    sc.check("the head's proxy answers /healthz", http.get("/healthz").status_code == 200)
    sc.findings["proxies"] = {}
    for node in sc.nodes[1:]:
        try:
            sc.findings["proxies"][node.name] = httpx.get(
                f"http://{node.ip}:{SERVE_PORT}/healthz", timeout=HTTP_TIMEOUT_S
            ).status_code
        except httpx.HTTPError as exc:
            sc.findings["proxies"][node.name] = exc.__class__.__name__
    sc.check("contracts listed", http.get("/v1/contracts").status_code == 200)
    sc.check("no token: 401", http.post("/v1/workspaces", json={}).status_code == 401)


def made_and_written(sc, http) -> dict:
    workspaces = {}
    for index in range(WORKSPACES):
        workspace_id = f"op-{index}-{uuid.uuid4().hex[:6]}"
        made = http.post("/v1/workspaces", json={"id": workspace_id}, headers=sc.admin)
        if made.status_code != 201:
            raise RuntimeError(f"create {workspace_id}: {made.status_code} {made.text}")
        workspaces[workspace_id] = {"token": made.json()["token"], "ids": [], "late": []}
    deadline = time.monotonic() + DEPLOY_TIMEOUT_S
    for workspace_id, ws in workspaces.items():
        for n in range(WRITES_PER_WORKSPACE):
            body = {
                "content": f"{workspace_id} decision {n} {uuid.uuid4().hex}: 東京 ünïcødé",
                "tags": ["operator"],
            }
            answer = sc.call(
                http,
                workspace_id,
                ws["token"],
                "capture",
                body,
                key=uuid.uuid4().hex,
                deadline=deadline,
            )
            if answer.status_code != 200 or answer.json().get("outcome") != "stored":
                raise RuntimeError(
                    f"capture on {workspace_id}: {answer.status_code} {answer.text[:300]}"
                )
            ws["ids"].append(answer.json()["id"])
    return workspaces


def reads_and_isolation(sc, http, workspaces: dict) -> None:
    first_id, first = next(iter(workspaces.items()))
    count = sc.call(http, first_id, first["token"], "getCount", {}).json()["count"]
    sc.check("getCount after writes", count == WRITES_PER_WORKSPACE, count)
    query = {"query": "decision", "topK": 3}
    recalled = sc.call(http, first_id, first["token"], "recall", query).json()
    sc.check("recall finds the writes", len(recalled.get("items", [])) > 0)
    other_id = list(workspaces)[1]
    foreign = sc.call(http, other_id, first["token"], "getCount", {})
    sc.check(
        "a workspace token is refused on another workspace",
        foreign.status_code in (401, 403),
        foreign.status_code,
    )


def no_runtime_env_shim(sc) -> None:
    # Ray starts a worker whose runtime env is not empty through its setup_worker.py shim
    # (a second interpreter); the raylet decides from exactly this field of the actor
    actors = [a for a in sc.state("actors", class_name="WorkspaceActor") if a["state"] == "ALIVE"]
    shimmed = [a["name"] for a in actors if a.get("serialized_runtime_env") not in ("", "{}")]
    sc.check(
        "workspace actors start without Ray's runtime-env shim",
        bool(actors) and not shimmed,
        {"alive": len(actors), "shimmed": shimmed[:5]},
    )
