"""The operations of the fault soak (fault_soak.py), each checked against the tenant's model.

An operation runs with its tenant's lock held (one call at a time per workspace, so the model
is exact); it updates the model only from acknowledged answers. A keyed write left unanswered
past the retry deadline suspends the tenant: the same write is sent again with the same key
once the faults stop, which tells whether it was applied.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import time

MOMENT_MARGIN_S = 2.2  # each side of a moment restored to: whole seconds apart
EDGE_TYPES = ("relates_to", "supersedes", "caused_by", "about_person", "part_of_project")
WORDS = [
    "harbor",
    "ledger",
    "orbit",
    "maple",
    "cobalt",
    "quartz",
    "lantern",
    "meadow",
    "falcon",
    "prism",
    "tundra",
    "velvet",
    "ember",
    "glacier",
    "canyon",
    "willow",
    "beacon",
    "summit",
    "delta",
    "copper",
]


def new_text(rng, tenant, kind: str) -> tuple[str, str]:
    """A text no other write shares: the tenant's marker, three words, a nonce (its last word,
    what the checker looks for in files, objects and answers)."""
    nonce = f"nz{rng.getrandbits(64):016x}"
    return nonce, f"{tenant.marker} {kind} {' '.join(rng.sample(WORDS, 3))} {nonce}"


def keyed(soak, http, rng, tenant, method: str, body: dict):
    """A write sent with an Idempotency-Key (again with it while no answer comes)."""
    key = f"k{rng.getrandbits(64):016x}"
    answer = soak.call(http, tenant, method, body, key=key)
    if answer is None:
        tenant.pending.append((method, body, key))
        tenant.suspended = True
    return answer


def capture(soak, http, rng, tenant, tags: tuple[str, ...] = ("soak",)) -> None:
    nonce, text = new_text(rng, tenant, "fact")
    tenant.written.add(nonce)
    answer = keyed(soak, http, rng, tenant, "capture", {"content": text, "tags": list(tags)})
    if answer is not None:
        tenant.entries[answer["id"]] = [text]


def capture_unkeyed(soak, http, rng, tenant) -> None:
    """Sent once, without a key: with no answer it may or may not be stored."""
    nonce, text = new_text(rng, tenant, "note")
    tenant.written.add(nonce)
    answer = soak.call(http, tenant, "capture", {"content": text}, retry=False)
    if answer is None:
        tenant.maybe[nonce] = text
    else:
        tenant.entries[answer["id"]] = [text]


def update(soak, http, rng, tenant) -> None:
    if not tenant.entries:
        return capture(soak, http, rng, tenant)
    entry = rng.choice(sorted(tenant.entries))
    nonce, text = new_text(rng, tenant, "revised")
    tenant.written.add(nonce)
    if keyed(soak, http, rng, tenant, "update", {"id": entry, "content": text}) is not None:
        tenant.entries[entry].append(text)
    return None


def forget(soak, http, rng, tenant) -> None:
    if not tenant.entries:
        return
    entry = rng.choice(sorted(tenant.entries))
    if keyed(soak, http, rng, tenant, "forget", {"id": entry}) is not None:
        soak.forget_texts(tenant.entries.pop(entry), f"forgotten in {tenant.id}")
        tenant.edges = {e for e in tenant.edges if entry not in e[:2]}


def link(soak, http, rng, tenant) -> None:
    if len(tenant.entries) < 2:
        return capture(soak, http, rng, tenant)
    src, dst = rng.sample(sorted(tenant.entries), 2)
    kind = rng.choice(EDGE_TYPES)
    if kind == "supersedes":  # the later known replaces the earlier: a cycle would be refused
        known = list(tenant.entries)
        src, dst = sorted((src, dst), key=known.index, reverse=True)
    if keyed(soak, http, rng, tenant, "link", {"src": src, "dst": dst, "type": kind}) is not None:
        if kind == "relates_to":  # symmetric: stored once, the smaller id first
            src, dst = sorted((src, dst))
        tenant.edges.add((src, dst, kind))
    return None


def recall(soak, http, rng, tenant) -> None:
    answer = soak.call(
        http, tenant, "recall", {"query": " ".join(rng.sample(WORDS, 2)), "topK": 10}
    )
    for item in (answer or {}).get("items", []):
        if item["id"] not in tenant.entries:
            soak.adopt(tenant, item, "recall")


def get_entry(soak, http, rng, tenant) -> None:
    if not tenant.entries:
        return
    entry = rng.choice(sorted(tenant.entries))
    answer = soak.call(http, tenant, "getEntry", {"id": entry})
    if answer is not None and answer.get("content") != tenant.entries[entry][-1]:
        soak.violation(
            "an entry read back other than acknowledged",
            tenant=tenant.id,
            entry=entry,
            read=(answer.get("content") or "")[:120],
            expected=tenant.entries[entry][-1][:120],
        )


def export_and_import(soak, http, rng, tenant) -> None:
    """The export equals the model; imported into a scratch workspace it gives the same
    count; the scratch workspace is deleted again."""
    exported = soak.export_of(http, tenant)
    if exported is None:
        return
    scratch = f"{tenant.id}-imp-{rng.getrandbits(32):08x}"
    # 409: made by a try whose answer was lost, then sent again
    if soak.admin_call(http, "POST", "/v1/workspaces", ok=(201, 409), json={"id": scratch}) is None:
        return
    try:
        body = "".join(line + "\n" for line in exported)
        key = hashlib.sha256(body.encode()).hexdigest()[:64]
        report = soak.admin_call(
            http,
            "POST",
            f"/v1/workspaces/{scratch}/import",
            params={"key": key, "first": "1", "final": "true"},
            content=body.encode(),
            extra_headers={"Content-Type": "application/x-ndjson"},
        )
        if report is not None and report.json().get("complete") is not True:
            soak.violation(
                "an import of a whole export not complete",
                tenant=tenant.id,
                report=report.text[:300],
            )
    finally:
        if soak.admin_call(http, "DELETE", f"/v1/workspaces/{scratch}", ok=(200, 404)) is None:
            soak.undeleted.append(scratch)  # it holds its texts until deleted


def snapshot_and_restore(soak, http, rng, tenant) -> None:
    """A snapshot, a write after it, and a restore to the snapshot: the write is gone and
    everything before it is back as it was."""
    base = f"/v1/workspaces/{tenant.id}"
    taken = soak.admin_call(http, "POST", f"{base}/snapshot")
    if taken is None:
        return
    before = (copy.deepcopy(tenant.entries), set(tenant.edges), dict(tenant.maybe))
    capture(soak, http, rng, tenant)
    if tenant.suspended:
        return
    version = {"version": taken.json()["version"]}
    if soak.admin_call(http, "POST", f"{base}/restore", json=version) is None:
        tenant.pending.append(("restore", {**version, "model": before}, ""))
        tenant.suspended = True
        return
    revert(tenant, before)


def revert(tenant, before) -> None:
    """The model after a restore to `before`. An unanswered keyless write stays possible: it
    may still be in flight and land after the restore."""
    entries, edges, maybe = before
    tenant.entries, tenant.edges, tenant.maybe = entries, edges, {**maybe, **tenant.maybe}


def restore_to_moment(soak, http, rng, tenant) -> None:
    """A moment between the acknowledged state and one more write (whole seconds apart: the
    replica timestamps a transaction when it ships it); a restore to it drops that write."""
    before = (copy.deepcopy(tenant.entries), set(tenant.edges), dict(tenant.maybe))
    time.sleep(MOMENT_MARGIN_S)
    moment = dt.datetime.now(dt.UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    time.sleep(MOMENT_MARGIN_S)
    capture(soak, http, rng, tenant)
    if tenant.suspended:
        return
    restored = soak.admin_call(
        http,
        "POST",
        f"/v1/workspaces/{tenant.id}/restore-to-moment",
        ok=(200, 404),
        json={"timestamp": moment},
    )
    if restored is None:
        tenant.pending.append(("restore-to-moment", {"timestamp": moment, "model": before}, ""))
        tenant.suspended = True
        return
    if not moment_gone(soak, restored):
        revert(tenant, before)
    return


def moment_gone(soak, answer) -> bool:
    """A restore to a moment refused because the replica no longer reaches it: its history
    started over after that moment (a forget's restart, or one owed and paid at a later wake:
    the new history begins when its first upload ships), and the moments before it are gone
    by design. Nothing was restored. Any other 404 is a violation."""
    if answer.status_code != 404:
        return False
    try:
        code = answer.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        code = None
    if code == "snapshot_not_found":
        soak.findings["momentsBeforeAHistoryRestart"] = (
            soak.findings.get("momentsBeforeAHistoryRestart", 0) + 1
        )
    else:
        soak.violation("an admin call refused", call="restore-to-moment", body=answer.text[:300])
    return True


def delete_and_create(soak, http, rng, tenant) -> None:
    """The id deleted and created again: everything the old tenant wrote must be nowhere, and
    the new one starts empty."""
    if soak.admin_call(http, "DELETE", f"/v1/workspaces/{tenant.id}", ok=(200, 404)) is None:
        tenant.suspended = True
        return
    for nonce in tenant.written:
        soak.gone[nonce] = f"{tenant.id} generation {tenant.generation} deleted"
    tenant.generation += 1
    tenant.entries, tenant.edges, tenant.maybe, tenant.written = {}, set(), {}, set()
    soak.create(http, tenant)
    count = soak.call(http, tenant, "getCount", {})
    if count is not None and count["count"] != 0:
        soak.violation(
            "an id created again does not start empty", tenant=tenant.id, count=count["count"]
        )
    return


OPERATIONS = {
    "capture": (capture, 30),
    "capture unkeyed": (capture_unkeyed, 8),
    "update": (update, 10),
    "forget": (forget, 8),
    "link": (link, 8),
    "recall": (recall, 14),
    "getEntry": (get_entry, 8),
    "export and import": (export_and_import, 3),
    "snapshot and restore": (snapshot_and_restore, 3),
    "restore to a moment": (restore_to_moment, 2),
    "delete and create": (delete_and_create, 2),
}


def resolve(soak, http, tenant) -> None:
    """The writes left unanswered, sent again with their keys now that the faults stopped:
    an applied one answers as it did, one that never arrived is applied now."""
    for method, body, key in tenant.pending:
        if method in ("restore", "restore-to-moment"):
            asked = {k: v for k, v in body.items() if k != "model"}
            ok = (200, 404) if method == "restore-to-moment" else (200,)
            answer = soak.admin_call(
                http, "POST", f"/v1/workspaces/{tenant.id}/{method}", ok=ok, json=asked
            )
            if answer is None:
                soak.violation("a restore never answered", tenant=tenant.id)
            if answer is None or not moment_gone(soak, answer):
                revert(tenant, body["model"])
            continue
        answer = soak.call(http, tenant, method, body, key=key)
        if answer is None:
            soak.violation("a keyed write never answered", tenant=tenant.id, method=method)
        elif method == "capture":
            tenant.entries[answer["id"]] = [body["content"]]
        elif method == "update":
            tenant.entries[body["id"]].append(body["content"])
        elif method == "forget":
            soak.forget_texts(tenant.entries.pop(body["id"]), f"forgotten in {tenant.id}")
        elif method == "link":
            ends = (body["src"], body["dst"])
            if body["type"] == "relates_to":
                ends = tuple(sorted(ends))
            tenant.edges.add((*ends, body["type"]))
    tenant.pending, tenant.suspended = [], False
