"""The memory tool's workload in the fault soak (fault_soak.py): one tenant whose workspace holds
Anthropic memory-tool files (`WorkspaceMemory` over the project's client, as an application
runs it) beside ordinary captures tagged `memory file`, which must never be taken for files.

The model is each file's texts, newest last. A command the tool answers as an error it did not
decide itself (the service refused it or could not be reached: a fault) leaves its paths
unsure; they are read back (`view`) until the service answers, and the model takes what is
there. A file deleted, and the earlier texts of a file renamed, are forgotten texts: the soak's
scan must find them nowhere.
"""

from __future__ import annotations

import time

from soak_workload import capture, new_text

from minisphere.client import Client
from minisphere.integrations.anthropic_memory import WorkspaceMemory
from minisphere.integrations.memory_files import FILES_TAG, ROOT

FOLDER = f"{ROOT}/soak"
# the tool's own answers when the service, not the tool, is why a command failed
SERVICE_FAILURES = ("could not reach the memory service", "memory service refused", "failed:")
RESYNC_DEADLINE_S = 150.0
RESYNC_PAUSE_S = 1.0


def is_file_entry(item: dict) -> bool:
    """An entry the memory tool keeps a file in (not in the tenant's entry model)."""
    return FILES_TAG in (item.get("tags") or []) or (item.get("content") or "").startswith(ROOT)


def tool(soak, tenant) -> WorkspaceMemory:
    if tenant.memory is None:
        tenant.memory = WorkspaceMemory(Client(soak.url).workspace(tenant.id, tenant.token))
    return tenant.memory


def run(soak, tenant, command: dict) -> tuple[str, bool, bool]:
    """(text, is_error, unsure): `unsure` when the service, not the tool, failed it."""
    text, is_error = tool(soak, tenant).run(command)
    unsure = is_error and any(reason in text for reason in SERVICE_FAILURES)
    with soak.guard:
        soak.memory_answers["unsure" if unsure else "error" if is_error else "ok"] += 1
    return text, is_error, unsure


def current_text(soak, tenant, path: str) -> str | None:
    """What the file holds now (None: no such file), read until the service answers."""
    deadline = time.monotonic() + RESYNC_DEADLINE_S
    while True:
        text, is_error, unsure = run(soak, tenant, {"command": "view", "path": path})
        if not is_error:
            lines = text.split("\n")[1:]  # the header, then "<number>\t<line>"
            return "\n".join(line.split("\t", 1)[1] for line in lines)
        if not unsure:
            return None  # the tool's own answer: no such file
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{path} of {tenant.id} unreadable for {RESYNC_DEADLINE_S} s")
        time.sleep(RESYNC_PAUSE_S)


def settle(soak, tenant, paths: list[str], maybe: dict[str, str]) -> None:
    """The model of `paths` after a command whose outcome is unknown, from what they hold now.
    `maybe`: path -> the text the command may have written there."""
    for path in paths:
        held = current_text(soak, tenant, path)
        known = tenant.files.get(path, [])
        if held is None:
            soak.forget_texts(tenant.files.pop(path, []), f"memory file deleted in {tenant.id}")
        elif held == maybe.get(path):
            tenant.files[path] = [*known, held] if known and known[-1] != held else [held]
        elif not known or known[-1] != held:
            soak.violation(
                "a memory file holds a text never written to it",
                tenant=tenant.id,
                path=path,
                held=held[:120],
            )


def create(soak, http, rng, tenant) -> None:
    nonce, text = new_text(rng, tenant, "memo")
    path = f"{FOLDER}/{nonce}.md"
    tenant.written.add(nonce)
    answer, is_error, unsure = run(
        soak, tenant, {"command": "create", "path": path, "file_text": text}
    )
    if unsure:
        settle(soak, tenant, [path], {path: text})
    elif is_error:
        soak.violation("a memory file create refused", tenant=tenant.id, answer=answer[:200])
    else:
        tenant.files[path] = [text]


def edit(soak, http, rng, tenant) -> None:
    if not tenant.files:
        return create(soak, http, rng, tenant)
    path = rng.choice(sorted(tenant.files))
    old = tenant.files[path][-1]
    nonce, _ = new_text(rng, tenant, "memo")
    tenant.written.add(nonce)
    new = old.rsplit(" ", 1)[0] + " " + nonce
    command = {
        "command": "str_replace",
        "path": path,
        "old_str": old.rsplit(" ", 1)[1],
        "new_str": nonce,
    }
    answer, is_error, unsure = run(soak, tenant, command)
    if unsure:
        settle(soak, tenant, [path], {path: new})
    elif is_error:
        soak.violation("a memory file edit refused", tenant=tenant.id, answer=answer[:200])
    else:
        tenant.files[path].append(new)
    return None


def rename(soak, http, rng, tenant) -> None:
    """The file made anew at its new path and its old entry forgotten: its earlier texts must
    be nowhere, its current one lives on at the new path."""
    if not tenant.files:
        return create(soak, http, rng, tenant)
    old = rng.choice(sorted(tenant.files))
    new = f"{FOLDER}/moved-{rng.getrandbits(48):012x}.md"
    text = tenant.files[old][-1]
    answer, is_error, unsure = run(
        soak, tenant, {"command": "rename", "old_path": old, "new_path": new}
    )
    if not unsure and is_error:
        soak.violation("a memory file rename refused", tenant=tenant.id, answer=answer[:200])
        return None
    moved = not unsure or current_text(soak, tenant, new) == text
    # a fault between making the new file and forgetting the old one leaves both
    old_left = unsure and current_text(soak, tenant, old) is not None
    if moved:
        tenant.files[new] = [text]
        if not old_left:
            soak.forget_texts(tenant.files.pop(old)[:-1], f"memory file renamed in {tenant.id}")
    elif not old_left:
        soak.violation("a renamed memory file is at neither path", tenant=tenant.id, path=old)
        tenant.files.pop(old)
    return None


def delete(soak, http, rng, tenant) -> None:
    if not tenant.files:
        return
    path = rng.choice(sorted(tenant.files))
    answer, is_error, unsure = run(soak, tenant, {"command": "delete", "path": path})
    if unsure:
        settle(soak, tenant, [path], {})
    elif is_error:
        soak.violation("a memory file delete refused", tenant=tenant.id, answer=answer[:200])
    else:
        soak.forget_texts(tenant.files.pop(path), f"memory file deleted in {tenant.id}")


def view(soak, http, rng, tenant) -> None:
    if tenant.files:
        check_file(soak, tenant, rng.choice(sorted(tenant.files)), "a memory file read back")


def check_file(soak, tenant, path: str, what: str) -> None:
    """The file holds the model's last text for it, else the violation `what` other than
    written."""
    held = current_text(soak, tenant, path)
    if held != tenant.files[path][-1]:
        soak.violation(
            f"{what} other than written",
            tenant=tenant.id,
            path=path,
            held=(held or "<no such file>")[:120],
            expected=tenant.files[path][-1][:120],
        )


def capture_tagged_like_files(soak, http, rng, tenant) -> None:
    """An ordinary capture whose tag normalises to what the tool once used: never a file."""
    capture(soak, http, rng, tenant, tags=("memory file",))


def check_files(soak, tenant) -> None:
    """At the end: the tool lists exactly the model's files, each holding its current text."""
    listing, is_error, _ = run(soak, tenant, {"command": "view", "path": ROOT})
    listed = {
        line.split("\t")[-1].strip()
        for line in listing.split("\n")[1:]
        if line.strip().endswith(".md")
    }
    if is_error or listed != set(tenant.files):
        soak.violation(
            "the memory tool lists other files than the model",
            tenant=tenant.id,
            missing=sorted(set(tenant.files) - listed)[:5],
            extra=sorted(listed - set(tenant.files))[:5],
            answer=listing[:200] if is_error else None,
        )
    for path in sorted(tenant.files):
        check_file(soak, tenant, path, "a memory file at the end")


MEMORY_OPERATIONS = {
    "memory create": (create, 10),
    "memory str_replace": (edit, 8),
    "memory rename": (rename, 4),
    "memory delete": (delete, 5),
    "memory view": (view, 6),
    "capture tagged memory file": (capture_tagged_like_files, 6),
}
