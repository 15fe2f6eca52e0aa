"""The fault soak's checks (fault_soak.py), a part of its `Soak`: each workspace's export held
against its model, the workspaces answering at the end, every live workspace process one the
directory holds, and no forgotten or deleted text in any node's file or stored object. Also what
a violation is read against (the workspace's last answers, its record, the nodes' log lines)."""

from __future__ import annotations

import contextlib
import gzip
import json
import sys
import time
import zlib

from operator_cluster import files_under, load_config
from soak_memory import check_files, is_file_entry
from soak_workload import resolve

SWEEP_TIMEOUT_S = 90.0  # for every copy of a forgotten or deleted text to be gone
ORPHAN_SETTLE_S = 30.0  # for kills and hibernations under way to be counted
EVIDENCE_CALLS = 8  # a workspace's last answers kept with a violation about it
EVIDENCE_LOG_LINES = 20  # and the nodes' last log lines that name it
# A Ray driver run on the head: what the directory holds (residents, hibernations, its pool).
RESIDENCY_DRIVER = """
import json, sys, ray
ray.init(address="auto", namespace=sys.argv[1], logging_level="ERROR", log_to_driver=False)
directory = ray.get_actor("directory")
print(json.dumps(ray.get(directory.residency_status.remote(), timeout=60)))
"""


class SoakChecks:
    """The checks of `Soak` (it holds the tenants, the model and the calls they use)."""

    # ---- what was seen ---------------------------------------------------------------------------
    def evidence(self, http, workspace_id: str) -> dict:
        """What a violation about one workspace is read against, gathered when it is found (a
        CI run keeps no node folders): its last answers, the directory's record of it, and the
        nodes' last log lines that name it."""
        with self.guard:
            calls = [c for c in self.journal if f"/{workspace_id}/" in c["path"] + "/"]
        try:
            record = http.get(f"/v1/workspaces/{workspace_id}", headers=self.admin).text[:600]
        except Exception as exc:  # noqa: BLE001 - evidence is best effort
            record = repr(exc)[:200]
        named = []
        for node in self.nodes:
            for path in sorted(node.folder.rglob("*")):
                if path.is_file() and path.suffix in (".log", ".err", ".out"):
                    with path.open(errors="replace") as lines:
                        named += [
                            f"{node.name}/{path.name}: {line.strip()[:200]}"
                            for line in lines
                            if workspace_id in line
                        ]
        return {
            "lastAnswers": calls[-EVIDENCE_CALLS:],
            "record": record,
            "logLines": named[-EVIDENCE_LOG_LINES:],
        }

    def export_of(self, http, tenant) -> list[str] | None:
        """The workspace's export lines, after checking them against the model."""
        answer = self.admin_call(http, "GET", f"/v1/workspaces/{tenant.id}/export")
        if answer is None:
            return None
        lines = [line for line in answer.text.splitlines() if line.strip()]
        records = [json.loads(line) for line in lines[1:]]
        entries = {r["id"]: r for r in records if r["record"] == "entry" and not is_file_entry(r)}
        for entry_id in set(entries) - set(tenant.entries):
            self.adopt(tenant, entries[entry_id], "export")
        missing = sorted(set(tenant.entries) - set(entries))
        if missing:
            self.violation(
                "an acknowledged entry missing",
                tenant=tenant.id,
                entries=missing,
                texts=[tenant.entries[e][-1][:100] for e in missing[:3]],
                **self.evidence(http, tenant.id),
            )
        for entry_id in set(entries) & set(tenant.entries):
            expected = tenant.entries[entry_id]
            got = [r["content"] for r in entries[entry_id].get("revisions", [])]
            if entries[entry_id]["content"] != expected[-1] or got != expected[:-1]:
                self.violation(
                    "an entry or its revisions other than acknowledged",
                    tenant=tenant.id,
                    entry=entry_id,
                    content=entries[entry_id]["content"][:100],
                    revisions=len(got),
                    expected=len(expected) - 1,
                )
        edges = {(r["src"], r["dst"], r["type"]) for r in records if r["record"] == "edge"}
        if edges != tenant.edges:
            self.violation(
                "edges other than acknowledged",
                tenant=tenant.id,
                missing=sorted(tenant.edges - edges)[:5],
                extra=sorted(edges - tenant.edges)[:5],
            )
        return lines

    # ---- after the faults -----------------------------------------------------------------------
    def final_checks(self, http) -> None:
        """Every workspace answers; its export equals its model; no forgotten or deleted text
        anywhere; no entry of one workspace in another's export."""
        for tenant in self.tenants:
            resolve(self, http, tenant)
            if self.call(http, tenant, "getCount", {}) is None:
                self.violation(
                    "a workspace not servable at the end",
                    tenant=tenant.id,
                    **self.evidence(http, tenant.id),
                )
                continue
            if tenant.files is not None:
                check_files(self, tenant)
            lines = self.export_of(http, tenant) or []
            count = self.call(http, tenant, "getCount", {})
            model = len(tenant.entries) + len(tenant.files or {})
            if count is not None and count["count"] != model:
                self.violation(
                    "getCount other than the acknowledged entries",
                    tenant=tenant.id,
                    count=count["count"],
                    model=model,
                )
            records = [json.loads(line) for line in lines[1:]]
            foreign = [
                record["content"][:120]
                for record in records
                if record["record"] == "entry"
                and not is_file_entry(record)
                and not record["content"].startswith(f"{tenant.marker} ")
            ]
            if foreign:
                self.violation(
                    "another workspace's entry in an export", tenant=tenant.id, lines=foreign[:3]
                )
        for scratch in self.undeleted:
            self.admin_call(http, "DELETE", f"/v1/workspaces/{scratch}", ok=(200, 404))
        self.orphan_check()
        # the scan must see a text that is still there, or finding nothing proves nothing
        live = {t.entries[e][-1].rsplit(" ", 1)[-1] for t in self.tenants for e in t.entries}
        seen = self.held(set(list(live)[:20]))
        self.findings["liveTextsSeenByTheScan"] = len(seen)
        self.findings["liveTextsSeenInTheStore"] = sum(
            any(place.startswith("store:") for place in places) for places in seen.values()
        )
        if live and not seen:
            self.violation("the scan for leftover texts cannot see live ones")
        deadline = time.monotonic() + SWEEP_TIMEOUT_S
        while (held := self.held(set(self.gone))) and time.monotonic() < deadline:
            time.sleep(2.0)
        for nonce, places in sorted(held.items()):
            self.violation(
                "a forgotten or deleted text still held",
                nonce=nonce,
                why=self.gone[nonce],
                places=places[:5],
            )

    @property
    def namespace(self) -> str:
        return self.config_env(load_config())["MINISPHERE_RAY_NAMESPACE"]

    def orphan_check(self) -> None:
        """Every live workspace process is the directory's: resident, hibernating, or a spare
        of its pool (ready, starting or on its way back). A directory killed mid-way must not
        leave processes that nothing frees."""
        deadline = time.monotonic() + ORPHAN_SETTLE_S
        while True:
            alive = len(
                [
                    a
                    for a in self.state("actors", class_name="WorkspaceActor")
                    if a["state"] in ("ALIVE", "PENDING_CREATION", "RESTARTING")
                ]
            )
            done = self.run_on_head(
                sys.executable, "-c", RESIDENCY_DRIVER, self.namespace, timeout=120
            )
            status = json.loads(done.stdout.strip().splitlines()[-1])
            spares = status["spares"]
            held = (
                status["resident"]
                + status["hibernating"]
                + spares["ready"]
                + spares["starting"]
                + spares["returning"]
            )
            if alive <= held or time.monotonic() >= deadline:
                break
            time.sleep(2.0)
        self.findings["workspaceProcesses"] = {"alive": alive, "heldByTheDirectory": held}
        if alive > held:
            self.violation(
                "workspace processes no one holds", alive=alive, held=held, status=status
            )

    def held(self, needles: set[str]) -> dict[str, list[str]]:
        """Which of `needles` any node's file or any stored object holds, and where: each file
        and object read once."""
        found: dict[str, list[str]] = {}
        for place, blob in self.blobs():
            for needle in needles:
                if needle.encode() in blob:
                    found.setdefault(needle, []).append(place)
        return found

    def blobs(self):
        for node in self.nodes:
            for path in files_under(node.folder / "data"):
                try:
                    yield f"{node.name}:{path.relative_to(node.folder)}", path.read_bytes()
                except OSError:  # gone since it was listed
                    continue
        for key, blob in self.stored_objects():
            if key.endswith(".gz"):  # snapshots: searched decompressed
                with contextlib.suppress(OSError, EOFError, zlib.error):
                    blob = gzip.decompress(blob)
            yield f"store:{key}", blob
