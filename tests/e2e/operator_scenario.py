"""The deployment an operator makes, on one machine: separate hosts stood in for by namespaces.

    sudo python tests/e2e/operator_scenario.py [--store s3|local] [--keep] [--json]

Each Ray node runs in namespaces of its own, with its own disk (operator_cluster.py); the route
checks are in operator_routes.py, the drills in operator_drills.py, the worker killed and the
redeploy in operator_node_loss.py. The procedure is infra/README.md's, step by step:

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
import signal
import sys
import time
import traceback
import uuid
import zlib
from pathlib import Path

# this file's folder: the scenario runs as a script
from operator_cluster import (
    DEPLOY_TIMEOUT_S,
    HTTP_TIMEOUT_S,
    POLL_S,
    ROOT,
    SERVE_CONFIG,
    SERVE_PORT,
    Cluster,
    dump_config,
    files_under,
    load_config,
    log,
)
from operator_routes import route_checks

WRITES_AFTER_SNAPSHOT = 2  # acknowledged after the snapshot (on the replica only)

NODE_STOP_TIMEOUT_S = 60.0


class Scenario(Cluster):
    def __init__(self, store: str, keep: bool):
        super().__init__(store, keep)
        # the local-store run uses async replication (the S3 run the checked-in sync), and no
        # spares, so the full-node drill's moves are not served by a spare on the full node
        self.replication = "async" if store == "local" else "sync"
        self.acknowledged_at: dict[str, float] = {}  # entry id -> when its write was answered
        self.killed_at: float | None = None
        self.copies_before_kill: dict[str, set[str]] = {}  # worker -> moved workspaces it held

    # ---- checks and timings ---------------------------------------------------------------------
    def check(self, name: str, ok: bool, detail=None) -> bool:
        self.findings["checks"][name] = bool(ok)
        if not ok:  # what a failed CI run shows first (the log's tail may be cut)
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

    # ---- HTTP, as the service's users see it ----------------------------------------------------
    def call(
        self,
        http,
        workspace: str,
        token: str,
        method: str,
        body: dict,
        key: str | None = None,
        deadline: float | None = None,
    ):
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
                raise TimeoutError(
                    f"{workspace}.{method}: no answer before the deadline; the last: {last}"
                )
            time.sleep(POLL_S)

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
                answer = self.call(
                    http,
                    workspace_id,
                    ws["token"],
                    "capture",
                    {"content": f"{workspace_id} late note {n} {uuid.uuid4().hex}"},
                )
                ws["late"].append(answer.json()["id"])

    def present(self, http, workspace_id: str, token: str, ids: list[str], deadline: float) -> int:
        found = 0
        for entry_id in ids:
            answer = self.call(
                http, workspace_id, token, "getEntry", {"id": entry_id}, deadline=deadline
            )
            here = answer.status_code == 200 and answer.json().get("id") == entry_id
            found += here
            if not here:  # what a missing write answered: for the findings
                self.findings.setdefault("missing", []).append(
                    [workspace_id, entry_id, answer.status_code, answer.text[:160]]
                )
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
            for path in files_under(node.folder / "data"):
                if holds(read(path), path.name):
                    found.append(f"{node.name}:{path.relative_to(node.folder)}")
        if self.store == "local":
            for path in files_under(self.shared_snapshots):
                if holds(read(path), path.name):
                    found.append(f"store:{path.relative_to(self.shared_snapshots)}")
            return found
        found += [f"store:{key}" for key, blob in self.stored_objects() if holds(blob, key)]
        return found

    def stored_objects(self):
        """(key, bytes) of every object in the S3 store's bucket (one deleted since it was
        listed is skipped)."""
        import boto3
        from botocore.exceptions import ClientError

        s3 = boto3.client(
            "s3",
            endpoint_url=self.s3_endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        bucket = self.config_env(load_config())["MINISPHERE_S3_BUCKET"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for item in page.get("Contents", []):
                try:
                    yield item["Key"], s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
                except ClientError:
                    continue

    def new_drill_workspace(self, http, label: str) -> tuple[str, dict]:
        workspace_id = f"drill-{label}-{uuid.uuid4().hex[:6]}"
        made = http.post("/v1/workspaces", json={"id": workspace_id}, headers=self.admin)
        if made.status_code != 201:
            raise RuntimeError(f"create {workspace_id}: {made.status_code} {made.text}")
        return workspace_id, {"Authorization": f"Bearer {made.json()['token']}"}

    def drill(
        self,
        http,
        workspace_id: str,
        headers: dict,
        method: str,
        body: dict,
        key: str | None = None,
    ) -> dict:
        answer = http.post(
            f"/v1/w/{workspace_id}/{method}",
            json=body,
            headers={**headers, **({"Idempotency-Key": key} if key else {})},
        )
        if answer.status_code != 200:
            raise RuntimeError(
                f"{method} on {workspace_id}: {answer.status_code} {answer.text[:300]}"
            )
        return answer.json()

    def admin_step(self, http, verb: str, path: str, **kw):
        answer = http.request(verb, path, headers=self.admin, **kw)
        if answer.status_code != 200:
            raise RuntimeError(f"{verb} {path}: {answer.status_code} {answer.text[:300]}")
        return answer

    def drills(self, http, workspaces: dict) -> None:
        import operator_drills as drills  # this file's folder (run as a script)

        for name, drill in (
            ("forget", drills.forget_drill),
            ("delete", drills.delete_drill),
            ("delete racing a wake", drills.delete_racing_wake_drill),
            ("restore to a moment", drills.restore_to_moment_drill),
        ):
            with self.timed(f"drill: {name}"):
                drill(self, http)
        if self.store == "local":  # no spares here: a full node's wakes really move
            with self.timed("drill: full node"):
                drills.full_node_drill(self, http)
        else:  # sync replication to the S3 server on the bridge
            with self.timed("drill: S3 down"):
                drills.s3_outage_drill(self, http, workspaces, next(iter(workspaces)))

    # ---- the whole run --------------------------------------------------------------------------
    def execute(self) -> dict:
        self.preflight()
        return self.guarded(self.procedure)

    def guarded(self, run) -> dict:
        """`run()` with its failure kept in the findings (a Ctrl-C or SIGTERM is raised again
        after) and the cleanup always done; the findings."""
        started = time.monotonic()
        try:
            run()
        except BaseException as exc:
            self.findings["ok"] = False
            self.findings["error"] = f"{exc.__class__.__name__}: {exc}"[:3000]
            # where it was raised, for a failure whose message alone names no call
            self.findings["errorAt"] = traceback.format_exception(exc)[-4:]
            self.findings["nodeLogs"] = {n.name: self.node_log(n, 800) for n in self.nodes}
            if not isinstance(exc, Exception):
                raise
        finally:
            with self.timed("cleanup"):
                self.findings["cleanup"] = self.cleanup()
            self.findings["timings"]["total"] = round(time.monotonic() - started, 1)
        return self.findings

    def procedure(self) -> None:
        import httpx
        import operator_node_loss as node_loss  # this file's folder (run as a script)

        with self.timed("network"):
            self.network_up()
        endpoint = self.s3_endpoint = self.start_s3() if self.store == "s3" else None
        self.write_env_file(endpoint)
        base = load_config()
        config_path = SERVE_CONFIG
        if self.store == "local":
            base = copy.deepcopy(base)
            self.config_env(base).update(
                MINISPHERE_SNAPSHOT_STORE="local",
                MINISPHERE_REPLICATION=self.replication,
                MINISPHERE_SPARE_ACTORS="0",
            )
            config_path = self.work / "serve_config.local.yaml"
            dump_config(base, config_path)
        self.findings["config"] = str(
            config_path.relative_to(ROOT)
            if config_path == SERVE_CONFIG
            else "infra/serve_config.yaml with "
            "MINISPHERE_SNAPSHOT_STORE=local, "
            "MINISPHERE_REPLICATION=async, "
            "MINISPHERE_SPARE_ACTORS=0"
        )
        with self.timed("cluster up"):
            self.cluster_up()
        log(f"nodes: {self.findings['nodes']}")
        with self.timed("serve deploy"):
            self.serve_deploy(config_path)
            self.findings["deployed"] = self.wait_running(DEPLOY_TIMEOUT_S)
        with httpx.Client(base_url=self.url, timeout=HTTP_TIMEOUT_S, headers={}) as http:
            with self.timed("route checks"):
                workspaces = route_checks(self, http)
                placed = self.placement(http, workspaces)
                self.snapshot_all(http, workspaces)
            self.findings["placedOn"] = placed
            log(f"placed: {placed}")
            self.check(
                "one directory and one scheduler after the deploy",
                all(len(v) == 1 for v in self.singletons().values()),
            )
            self.drills(http, workspaces)
            placed = self.placement(http, workspaces)  # the drills may have moved some
            node_loss.kill_worker(self, http, workspaces, placed)
            # a `serve deploy` of a changed config is the checked-in config's check (the s3
            # run); the local run is there for async replication and the full node's moves
            if self.store == "s3":
                node_loss.redeploy(self, http, workspaces, base)
        self.findings["ok"] = all(self.findings["checks"].values())


def summary(findings: dict) -> str:
    lines = [
        f"operator scenario ({findings['store']} snapshots): "
        f"{'PASSED' if findings.get('ok') else 'FAILED'}"
    ]
    for node in findings.get("nodes", []):
        lines.append(
            f"  node {node['name']:<4} {node['ip']:<12} {node['nodeId']}  "
            f"CPU {node['cpus']:g}  workspace slots {node['slots']:g}"
        )
    if "proxies" in findings:
        lines.append(f"  workers' own port {SERVE_PORT} (no proxy expected): {findings['proxies']}")
    if "placedOn" in findings:
        lines.append(f"  placed: {findings['placedOn']}")
    if "stopped" in findings:
        moved = findings.get("moved", {})
        lines.append(
            f"  kill -9 on {findings['stopped']}: {len(moved)} workspaces moved -> "
            + ", ".join(
                f"{w} {r['before']}->{r['after']} ({r['source']}, "
                f"{r['snapshotted'] + r['late']} of {r['acknowledged']} "
                "acknowledged writes present)"
                for w, r in moved.items()
            )
        )
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
    parser.add_argument(
        "--store",
        choices=("s3", "local"),
        default="s3",
        help="snapshot store: s3 (moto on the bridge; the config unchanged) or "
        "local (one folder every node mounts)",
    )
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
