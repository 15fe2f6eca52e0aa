"""Idempotency keys: a write sent again with the same key answers what it answered the first
time and writes nothing.

The key, the call's method and a digest of its validated arguments, and its answer are stored
in the workspace file in the same transaction (the same savepoint) as the write itself, so a
key exists exactly when its write committed: a caller who never heard back — the actor died,
the call timed out while it stayed queued — sends the call again with its key and learns the
committed answer instead of applying the write twice. The same key with another method or other
arguments is refused (`IdempotencyKeyReused`). Keys are kept at least IDEMPOTENCY_KEEP_MS and
pruned in every write transaction after that (and from every snapshot copy).

A forget reaches the stored answers too: the answer of an `append`, `update` or `setStatus` is
the whole entry with its revisions, so each answer that names the forgotten entry is replaced
by a marker (and its argument digest, itself a fingerprint of the forgotten text, is dropped).
A repeat of such a call learns that its entry was forgotten instead of getting the text back.

A restore replaces the file by an older state, whose table lacks the keys of the writes it
undid; those keys are carried into it (`carry_answers`). A write stays applied at most once
across a restore: a copy of it still in flight, or sent again by a caller who missed the
answer, is answered as before and is not applied to the restored state.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minisphere.engine import db
from minisphere.errors import IdempotencyKeyReused, MalformedRequest, NotFound

if TYPE_CHECKING:  # pragma: no cover - types only
    from pydantic import BaseModel

    from minisphere.engine.db import Connection

IDEMPOTENCY_KEEP_MS = 24 * 3600 * 1000  # a key answers repeats for at least a day
PRUNE_ROWS_PER_BATCH = 200  # expired keys removed per keyed batch, at most
FORGOTTEN_DIGEST = ""  # marks an answer purged by a forget
KEY_PATTERN = re.compile(r"^[\x21-\x7e]{1,200}$")  # 1-200 printable ASCII, no spaces


def check_key(key: str) -> str:
    """The key, or MalformedRequest: a key is not an argument of the method but part of the
    request around it (over HTTP, its Idempotency-Key header), so a bad one is a 400."""
    if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
        raise MalformedRequest(
            "Idempotency-Key: 1 to 200 printable ASCII characters without spaces"
        )
    return key


def digest(method_name: str, args: BaseModel) -> str:
    canonical = json.dumps(
        args.model_dump(mode="json", by_alias=True),
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(f"{method_name}\n{canonical}".encode()).hexdigest()


def recall(
    conn: Connection, key: str | None, method_name: str, args: BaseModel
) -> dict[str, Any] | None:
    """The stored answer of this call under `key`, or None when the key is new."""
    if key is None:
        return None
    check_key(key)
    row = conn.execute(
        "SELECT method, body_hash, answer FROM idempotency_keys WHERE key = ?", (key,)
    ).fetchone()
    if row is None:
        return None
    if row[1] == FORGOTTEN_DIGEST:
        forgotten = json.loads(row[2]).get("forgotten")
        raise NotFound(
            f"the entry this call wrote ({forgotten}) was forgotten since; nothing was written"
        )
    if row[0] != method_name or row[1] != digest(method_name, args):
        raise IdempotencyKeyReused(
            f"idempotency key {key!r} was used for another call "
            f"({row[0]} with other arguments); use a new key per write"
        )
    answer: dict[str, Any] = json.loads(row[2])
    return answer


def remember(
    conn: Connection, key: str | None, method_name: str, args: BaseModel, answer: Any, now_ms: int
) -> None:
    if key is None:
        return
    conn.execute(
        "INSERT INTO idempotency_keys(key, method, body_hash, answer, at) VALUES (?, ?, ?, ?, ?)",
        (
            key,
            method_name,
            digest(method_name, args),
            json.dumps(answer, ensure_ascii=False, separators=(",", ":")),
            now_ms,
        ),
    )


def prune(conn: Connection, now_ms: int) -> None:
    conn.execute(
        "DELETE FROM idempotency_keys WHERE key IN (SELECT key FROM idempotency_keys "
        "WHERE at < ? ORDER BY at LIMIT ?)",
        (now_ms - IDEMPOTENCY_KEEP_MS, PRUNE_ROWS_PER_BATCH),
    )


def forget_answers(conn: Connection, entry_id: str) -> int:
    """Purge the stored answers that name `entry_id` (inside the forget's transaction): each
    becomes a marker naming only the id. Returns how many were purged."""
    marker = json.dumps({"forgotten": entry_id})
    return conn.execute(
        "UPDATE idempotency_keys SET answer = ?, body_hash = ? WHERE instr(answer, ?) > 0",
        (marker, FORGOTTEN_DIGEST, f'"{entry_id}"'),
    ).rowcount


def carry_answers(replaced: Path, restored: Path) -> int:
    """Copy into the closed file `restored` the stored answers of the closed file `replaced`
    (the live file a restore is about to replace) that it lacks; how many. A file without the
    table on either side carries nothing."""
    if not replaced.exists():
        return 0
    conn = db.sqlite3.connect(str(restored), isolation_level=None)
    try:
        conn.execute("PRAGMA secure_delete = ON")
        conn.execute("ATTACH DATABASE ? AS replaced", (str(replaced),))
        return conn.execute(
            "INSERT OR IGNORE INTO main.idempotency_keys(key, method, body_hash, answer, at) "
            "SELECT key, method, body_hash, answer, at FROM replaced.idempotency_keys"
        ).rowcount
    except db.OperationalError:  # a file from before idempotency keys
        return 0
    finally:
        conn.close()
