"""A randomized fault soak on the operator's three-node cluster (operator_cluster.py).

    sudo python tests/e2e/fault_soak.py [--seed N] [--duration-s S] [--json]

Workload threads run a mixed load over several workspaces through the head's HTTP proxy
(captures with and without Idempotency-Key, updates, forgets, links, recalls, reads, exports
imported into a scratch workspace, snapshot-and-restore, delete and create again of an id; the
memory tool's files in one more workspace, soak_memory.py) while a fault thread injects, at
random, the faults of soak_faults.py (kill -9 of workspace actors, of the directory, of a node's
Litestream daemon and of a whole node; SIGSTOP of a daemon or a raylet; the S3-protocol server
restarted; a hibernated copy corrupted on disk) and of soak_tenant_faults.py (an actor stopped
past the liveness bound, one tenant holding the ingress, a forget on a large workspace followed
by its node's loss). `--faults` names the kinds a run injects.

Every call is judged against a model of what was acknowledged. The checker, during the run and
after the faults stop:
- no acknowledged write is missing or doubled (the replication is the checked-in `sync`), each
  workspace's export equal to its model, entry by entry, edge by edge;
- no forgotten entry's text and no deleted workspace's text in any file of any node, any stored
  object or any answer;
- no answer carrying another workspace's data;
- no 5xx but 503, and every 503 with Retry-After;
- every workspace servable at the end, and the memory tool's files as the model holds them
  (soak_checks.py holds the checks made after the faults stop).

The random choices are seeded (`--seed`): the same seed sends the same operations and picks the
same faults in the same order (their timing against each other still varies with the machine).
Prints a summary; with `--json` the last line of stdout is the findings.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import signal
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from operator_cluster import HTTP_TIMEOUT_S, ROOT, log
from operator_scenario import DEPLOY_TIMEOUT_S, SERVE_CONFIG, Scenario
from soak_checks import SoakChecks
from soak_faults import FAULTS
from soak_memory import MEMORY_OPERATIONS
from soak_tenant_faults import TENANT_FAULTS, fill_large
from soak_workload import OPERATIONS

WORKSPACES = 6
MEMORY_WORKSPACES = 1  # beside them: workspaces the memory tool keeps files in
WORKLOAD_THREADS = 3
RETRY_DEADLINE_S = 150.0  # a call re-sent (keyed: with its key) this long: a node restart
#                                 and a restore from the replica fit in it
RETRY_PAUSE_S = 0.5
FAULT_GAP_S = (3.0, 9.0)  # between the end of one fault and the start of the next
MIN_FAULTS_GRACE_S = 180.0  # the most a run goes on past its duration for its `--min-faults`
RESULTS = ROOT / "bench" / "results" / "fault-soak.md"


@dataclass
class Tenant:
    """One workspace as the soak believes it is: what was acknowledged, nothing else."""

    id: str
    token: str
    generation: int = 0
    entries: dict[str, list[str]] = field(default_factory=dict)  # id -> its texts, newest last
    edges: set[tuple[str, str, str]] = field(default_factory=set)
    maybe: dict[str, str] = field(default_factory=dict)  # nonce -> text: unanswered, unkeyed
    written: set[str] = field(default_factory=set)  # every nonce sent in this generation
    pending: list[tuple[str, dict, str]] = field(default_factory=list)  # keyed, unanswered
    suspended: bool = False  # a keyed write went unanswered: no more calls until the end
    lock: threading.Lock = field(default_factory=threading.Lock)
    # a memory-tool tenant's files: path -> its texts, newest last (None: not one)
    files: dict[str, list[str]] | None = None
    memory: Any = None  # its memory tool, made at its first command

    @property
    def marker(self) -> str:
        return f"{self.id}/g{self.generation}"


def ours(answer) -> bool:
    """An answer Mini-Sphere wrote (its JSON error envelope), not Serve's proxy."""
    try:
        return "error" in answer.json()
    except ValueError:
        return False


def journal_entry(sent, verb, path, headers, body, status: int | None, answer: str) -> dict:
    return {
        "sent": round(sent, 3),
        "took": round(time.time() - sent, 3),
        "call": verb,
        "path": path,
        "key": headers.get("Idempotency-Key"),
        "body": json.dumps(body)[:200] if body is not None else None,
        "status": status,
        "answer": answer,
    }


class Soak(SoakChecks, Scenario):
    def __init__(
        self,
        seed: int,
        duration_s: float,
        keep: bool,
        only: list[str] | None = None,
        min_faults: int = 0,
    ):
        super().__init__("s3", keep)
        # the run goes on past its duration until this many faults were injected (a busy
        # machine makes each fault take longer), up to MIN_FAULTS_GRACE_S more
        self.min_faults = min_faults
        self.only = only  # the fault kinds injected (None: every kind)
        self.seed, self.duration_s = seed, duration_s
        self.fill_rng = random.Random(f"{seed}/fill")  # the large workspace's texts
        self.tenants: list[Tenant] = []
        self.gone: dict[str, str] = {}  # nonce -> why it must be nowhere
        # scratch workspaces whose delete went unanswered: deleted again before the final scan
        self.undeleted: list[str] = []
        self.violations: list[dict] = []
        self.operations: Counter = Counter()
        self.faults: Counter = Counter()
        self.fault_log: list[str] = []
        self.statuses: Counter = Counter()
        self.stop = threading.Event()
        self.guard = threading.Lock()
        self.fault_http = None
        self.node_fault_until = 0.0  # a node-level fault runs (and its aftermath) until then
        self.proxy_errors = 0
        # every call and its answer, in order: with --keep written next to the nodes' logs, so
        # a violation can be read against what the workspace was asked and answered
        self.journal: list[dict] = []
        self.memory_answers: Counter = Counter()  # the memory tool's answers: ok, error, unsure

    def violation(self, kind: str, **detail) -> None:
        with self.guard:
            self.violations.append({"kind": kind, **detail})
        log(f"VIOLATION {kind}: {json.dumps(detail, default=str)[:400]}")

    def judge(self, answer, what: str) -> bool:
        """Only 503 may be a 5xx, and a 503 always says when to come back. One exception,
        Serve's and not ours: its HTTP proxy answers a bare 500 for a request whose ingress
        replica died with its node, which a node-level fault may do (counted apart, and the
        call treated as unanswered). Whether the answer is one to keep."""
        with self.guard:
            self.statuses[answer.status_code] += 1
        if answer.status_code >= 500 and answer.status_code != 503:
            if not ours(answer) and time.monotonic() < self.node_fault_until:
                with self.guard:
                    self.proxy_errors += 1
                return False
            self.violation(
                "a 5xx other than 503", call=what, status=answer.status_code, body=answer.text[:300]
            )
        if answer.status_code == 503 and not answer.headers.get("Retry-After"):
            self.violation("a 503 without Retry-After", call=what, body=answer.text[:300])
        return True

    def request(self, http, verb: str, path: str, headers: dict, retry: bool, **kw):
        """The answer to a call (200 or a refusal other than 503/429), or None when none came:
        with `retry` it is sent again (same headers, so the same key) until the deadline."""
        import httpx

        deadline = time.monotonic() + RETRY_DEADLINE_S
        while True:
            sent = time.time()
            try:
                answer = http.request(verb, path, headers=headers, **kw)
            except httpx.HTTPError as exc:
                answer = None
                self.note_call(sent, verb, path, headers, kw, None, repr(exc)[:120])
            else:
                self.note_call(sent, verb, path, headers, kw, answer.status_code, answer.text[:160])
                if not self.judge(answer, f"{verb} {path}"):
                    answer = None
                elif answer.status_code not in (429, 503):
                    return answer
            if not retry or time.monotonic() >= deadline:
                return None
            time.sleep(RETRY_PAUSE_S)

    def note_call(self, sent, verb, path, headers, kw, status: int | None, answer: str) -> None:
        """A call and its answer (no status: none came) in the journal."""
        entry = journal_entry(sent, verb, path, headers, kw.get("json"), status, answer)
        with self.guard:
            self.journal.append(entry)

    def call(
        self,
        http,
        tenant: Tenant,
        method: str,
        body: dict,
        key: str | None = None,
        retry: bool = True,
    ):
        """A workspace call's JSON (200), or None when no answer came. Any other answer to the
        soak's calls (all valid) is a violation."""
        headers = {
            "Authorization": f"Bearer {tenant.token}",
            **({"Idempotency-Key": key} if key else {}),
        }
        answer = self.request(
            http, "POST", f"/v1/w/{tenant.id}/{method}", headers, retry, json=body
        )
        if answer is None:
            return None
        if answer.status_code != 200:
            self.violation(
                "a valid call refused",
                tenant=tenant.id,
                method=method,
                status=answer.status_code,
                body=answer.text[:300],
            )
            return None
        return answer.json()

    def admin_call(self, http, verb: str, path: str, ok=(200,), extra_headers=None, **kw):
        answer = self.request(http, verb, path, {**self.admin, **(extra_headers or {})}, True, **kw)
        if answer is None:
            return None
        if answer.status_code not in ok:
            self.violation(
                "an admin call refused",
                call=f"{verb} {path}",
                status=answer.status_code,
                body=answer.text[:300],
            )
            return None
        return answer

    # ---- the model ------------------------------------------------------------------------------
    def forget_texts(self, texts: list[str], why: str) -> None:
        for text in texts:
            self.gone[text.rsplit(" ", 1)[-1]] = why

    def adopt(self, tenant: Tenant, item: dict, where: str) -> None:
        """An entry in an answer that the model does not hold: a write whose answer never came
        (then it is taken in) or a violation (lost, forgotten, or another tenant's)."""
        content = item.get("content") or ""
        nonce = content.rsplit(" ", 1)[-1]
        if content.startswith(tenant.marker + " ") and nonce in tenant.maybe:
            tenant.entries[item["id"]] = [tenant.maybe.pop(nonce)]
            return
        why = self.gone.get(nonce, "another workspace's or never written")
        self.violation(
            "an answer held an entry the model does not",
            tenant=tenant.id,
            where=where,
            entry=item.get("id"),
            content=content[:120],
            why=why,
        )

    # ---- workspaces -----------------------------------------------------------------------------
    def create(self, http, tenant: Tenant) -> None:
        made = self.admin_call(
            http, "POST", "/v1/workspaces", ok=(201, 409), json={"id": tenant.id}
        )
        if made is not None and made.status_code == 409:  # made, but its answer was lost
            made = self.admin_call(
                http,
                "POST",
                f"/v1/workspaces/{tenant.id}/tokens",
                ok=(201,),
                json={"scope": "write"},
            )
        if made is None:
            raise RuntimeError(f"{tenant.id} could not be created")
        tenant.token = made.json()["token"]

    # ---- the run --------------------------------------------------------------------------------
    def workload(self, index: int) -> None:
        import httpx

        rng = random.Random(f"{self.seed}/workload/{index}")
        mine = self.tenants[index::WORKLOAD_THREADS]
        with httpx.Client(base_url=self.url, timeout=HTTP_TIMEOUT_S) as http:
            while not self.stop.is_set():
                tenant = rng.choice(mine)
                table = MEMORY_OPERATIONS if tenant.files is not None else OPERATIONS
                name = rng.choices(list(table), [weight for _, weight in table.values()])[0]
                with tenant.lock:
                    if tenant.suspended:
                        time.sleep(RETRY_PAUSE_S)
                        continue
                    try:
                        table[name][0](self, http, rng, tenant)
                    except Exception as exc:  # noqa: BLE001 - a broken soak must not pass
                        self.violation(
                            "the workload itself failed", operation=name, error=repr(exc)
                        )
                        tenant.suspended = True
                with self.guard:
                    self.operations[name] += 1

    def inject(self) -> None:
        import httpx

        rng = random.Random(f"{self.seed}/faults")
        faults = {
            name: fault
            for name, fault in {**FAULTS, **TENANT_FAULTS}.items()
            if self.only is None or name in self.only
        }
        names = list(faults)
        weights = [faults[name][1] for name in names]
        with httpx.Client(base_url=self.url, timeout=HTTP_TIMEOUT_S) as self.fault_http:
            while not self.stop.wait(rng.uniform(*FAULT_GAP_S)):
                name = rng.choices(names, weights)[0]
                try:
                    done = faults[name][0](self, rng)
                except Exception as exc:  # noqa: BLE001 - a fault that failed is reported
                    done = None
                    self.fault_log.append(f"{name} failed: {exc!r}"[-900:])
                if done is not None:
                    self.faults[name] += 1
                    self.fault_log.append(f"{name}: {done}")
                    log(f"fault: {name}: {done}")

    def soak(self, http) -> None:
        for index in range(WORKSPACES + MEMORY_WORKSPACES):
            tenant = Tenant(f"soak-{index}-{uuid.uuid4().hex[:6]}", "")
            if index >= WORKSPACES:
                tenant.files = {}
            self.create(http, tenant)
            self.tenants.append(tenant)
        with self.timed("large workspace filled"):
            fill_large(self, http, self.tenants[0])
        threads = [
            threading.Thread(target=self.workload, args=(i,), daemon=True)
            for i in range(WORKLOAD_THREADS)
        ]
        threads.append(threading.Thread(target=self.inject, daemon=True))
        for thread in threads:
            thread.start()
        self.stop.wait(self.duration_s)
        grace_ends = time.monotonic() + MIN_FAULTS_GRACE_S
        while sum(self.faults.values()) < self.min_faults and time.monotonic() < grace_ends:
            time.sleep(1.0)
        self.stop.set()
        for thread in threads:
            thread.join(RETRY_DEADLINE_S * 2)
        self.findings["threadsLeft"] = sum(thread.is_alive() for thread in threads)

    def execute(self) -> dict:
        self.preflight()
        try:
            return self.guarded(self.procedure)
        finally:
            if self.keep:
                journal = self.work / "journal.jsonl"
                journal.write_text(
                    "".join(json.dumps(line) + "\n" for line in self.journal), encoding="utf-8"
                )
                self.findings["journal"] = str(journal)
            self.findings.update(
                seed=self.seed,
                durationS=self.duration_s,
                operations=dict(self.operations),
                faults=dict(self.faults),
                faultLog=self.fault_log,
                statuses=dict(self.statuses),
                violations=self.violations,
                goneTextsChecked=len(self.gone),
                proxyErrorsWhenAReplicaDied=self.proxy_errors,
                entriesChecked=sum(len(t.entries) for t in self.tenants),
                memoryFilesChecked=sum(len(t.files or {}) for t in self.tenants),
                memoryToolAnswers=dict(self.memory_answers),
            )

    def procedure(self) -> None:
        import httpx

        self.network_up()
        self.s3_endpoint = self.start_s3()
        self.write_env_file(self.s3_endpoint)
        with self.timed("cluster up"):
            self.cluster_up()
            self.serve_deploy(SERVE_CONFIG)
            self.wait_running(DEPLOY_TIMEOUT_S)
        with httpx.Client(base_url=self.url, timeout=HTTP_TIMEOUT_S) as http:
            with self.timed("soak"):
                self.soak(http)
            with self.timed("final checks"):
                self.final_checks(http)
        self.findings["ok"] = not self.violations and not self.findings.get("threadsLeft")


def summary(findings: dict) -> str:
    lines = [
        f"fault soak, seed {findings.get('seed')}, {findings.get('durationS')} s: "
        f"{'PASSED' if findings.get('ok') else 'FAILED'}",
        f"  operations: {findings.get('operations')}",
        f"  faults: {findings.get('faults')}",
        f"  answers by status: {findings.get('statuses')}",
        f"  entries checked at the end: {findings.get('entriesChecked')}; forgotten or "
        f"deleted texts looked for: {findings.get('goneTextsChecked')}; memory-tool files "
        f"checked: {findings.get('memoryFilesChecked')} (answers {findings.get('memoryToolAnswers')})",
        "  restores to a moment before the replica's history started over (refused, by "
        f"design): {findings.get('momentsBeforeAHistoryRestart', 0)}",
        f"  violations: {len(findings.get('violations', []))}",
    ]
    lines += [f"    {json.dumps(v, default=str)[:300]}" for v in findings.get("violations", [])]
    lines.append(f"  timings (s): {findings.get('timings')}")
    if findings.get("error"):
        lines.append(f"  error: {findings['error']}")
        lines += [f"    {line.rstrip()}" for line in findings.get("errorAt", [])]
    return "\n".join(lines)


def results_page(findings: dict, argv: list[str], heading: str = "# fault-soak benchmark") -> str:
    """bench/results/fault-soak.md: the run's command, faults by kind, operations, answers and
    every violation (the long form's figures, as the issue asks them); under `heading`, so a
    second seed's run can follow the first on one page."""
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows = [f"| {name} | {count} |" for name, count in sorted(findings.get("faults", {}).items())]
    ops = [
        f"| {name} | {count} |" for name, count in sorted(findings.get("operations", {}).items())
    ]
    violations = findings.get("violations", [])
    return "\n".join(
        [
            heading,
            "",
            f"Command: `sudo python tests/e2e/fault_soak.py {' '.join(argv)}`  ",
            f"Run: {stamp} on {platform.node()} ({platform.machine()}, Python "
            f"{platform.python_version()})",
            "",
            f"Verdict: {'PASSED' if findings.get('ok') else 'FAILED'}, "
            f"{len(violations)} invariant violations (target 0); seed {findings.get('seed')}, "
            f"{findings.get('durationS')} s of workload and faults.",
            "",
            "| fault injected | times |",
            "|---|---|",
            *rows,
            "",
            "| operation | times |",
            "|---|---|",
            *ops,
            "",
            f"- answers by HTTP status: {findings.get('statuses')}; of the 500s, "
            f"{findings.get('proxyErrorsWhenAReplicaDied')} were Serve's proxy answering for an "
            "ingress replica that died with its node (not a Mini-Sphere answer; the call was sent "
            "again as unanswered)",
            f"- at the end: {findings.get('entriesChecked')} acknowledged entries checked entry by "
            f"entry against each workspace's export; {findings.get('goneTextsChecked')} forgotten "
            "or deleted texts looked for in every node's files and every stored object "
            f"({findings.get('liveTextsSeenByTheScan')} live texts seen by the same scan, "
            f"{findings.get('liveTextsSeenInTheStore')} of them in the store)",
            f"- the memory tool: {findings.get('memoryFilesChecked')} files checked at the end "
            f"against its model (listing and contents); its answers {findings.get('memoryToolAnswers')} "
            "(unsure: the service was down or refused, and the files were read back)",
            f"- timings (s): {findings.get('timings')}",
            *[f"- violation: {json.dumps(v, default=str)[:400]}" for v in violations],
            "",
        ]
    )


def interrupted(*_) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--duration-s", type=float, default=600.0, help="how long the workload and the faults run"
    )
    parser.add_argument("--keep", action="store_true", help="keep the nodes' folders and logs")
    parser.add_argument(
        "--min-faults", type=int, default=0, help="go on past the duration until this many faults"
    )
    parser.add_argument(
        "--faults",
        help="only these fault kinds, comma-separated (default: every kind): "
        + ", ".join([*FAULTS, *TENANT_FAULTS]),
    )
    parser.add_argument("--json", action="store_true", help="findings as JSON on the last line")
    parser.add_argument(
        "--results", action="store_true", help=f"write the figures to {RESULTS.relative_to(ROOT)}"
    )
    parser.add_argument(
        "--results-append", action="store_true", help="add the figures to that page, after a run"
    )
    args = parser.parse_args(argv)
    only = args.faults.split(",") if args.faults else None
    unknown = set(only or ()) - {*FAULTS, *TENANT_FAULTS}
    if unknown:
        parser.error(f"no fault kind {sorted(unknown)}")
    soak = Soak(args.seed, args.duration_s, args.keep, only, args.min_faults)
    signal.signal(signal.SIGTERM, interrupted)
    try:
        findings = soak.execute()
    except KeyboardInterrupt:
        findings = soak.findings
    print(summary(findings), file=sys.stderr, flush=True)
    command = sys.argv[1:] if argv is None else argv
    if args.results:
        RESULTS.write_text(results_page(findings, command), encoding="utf-8")
    elif args.results_append:
        page = results_page(findings, command, f"## Seed {findings.get('seed')}")
        with RESULTS.open("a", encoding="utf-8") as results:
            results.write("\n" + page)
    if args.json:
        print(json.dumps(findings, default=str), flush=True)
    return 0 if findings.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
