"""Restores from the replica: the newest state of a workspace, or its state at a past moment
(`litestream restore -timestamp`), rebuilt into a file."""

from __future__ import annotations

import json
import logging
import subprocess
import tempfile
from pathlib import Path
from typing import TypedDict

from minisphere.durability.replication.binary import litestream_binary
from minisphere.durability.restores import swap_in, verify_database
from minisphere.engine import db
from minisphere.engine.clock import epoch_ms
from minisphere.engine.idempotency import carry_answers
from minisphere.engine.location import rebase
from minisphere.errors import SnapshotCorrupt, SnapshotError, SnapshotNotFound

log = logging.getLogger("minisphere.replication")
RESTORE_TIMEOUT_S = 300.0  # `litestream restore` of one workspace
# how `litestream restore -timestamp` says the replica holds nothing at or before the moment
NOTHING_AT_THAT_MOMENT = ("timestamp does not exist", "no matching", "not found")


class MomentRestore(TypedDict):
    """The moment restored, the position the restored state took, where the old file went."""

    moment: str
    position: int
    aside: str | None


def restore_from_replica(
    url: str, target: Path, *, timestamp: str | None = None, env: dict[str, str] | None = None
) -> bool:
    """Rebuild the replica's newest state (or its state at `timestamp`, RFC 3339) into
    `target`; False when the replica holds nothing yet."""
    target.unlink(missing_ok=True)
    argv = [litestream_binary(), "restore", "-if-replica-exists", "-o", str(target)]
    if timestamp:
        argv += ["-timestamp", timestamp]
    done = subprocess.run(
        [*argv, url], capture_output=True, text=True, env=env, timeout=RESTORE_TIMEOUT_S
    )
    if done.returncode != 0:
        raise SnapshotError(
            f"litestream restore from {url} failed: {(done.stderr or done.stdout).strip()[-300:]}"
        )
    return target.exists()


def newest_moment(url: str, env: dict[str, str] | None = None) -> str | None:
    """When the replica's newest transaction was shipped (RFC 3339, UTC), None if it has none."""
    done = subprocess.run(
        [litestream_binary(), "ltx", "-json", "-level", "all", url],
        capture_output=True,
        text=True,
        env=env,
        timeout=RESTORE_TIMEOUT_S,
    )
    if done.returncode != 0:
        raise SnapshotError(
            f"litestream ltx of {url} failed: {(done.stderr or done.stdout).strip()[-300:]}"
        )
    files = json.loads(done.stdout or "[]") or []
    stamps = [item["timestamp"] for item in files if item.get("timestamp")]
    return max(stamps) if stamps else None


def restore_moment(
    url: str, db_path: Path, moment: str, new_position: int, env: dict[str, str] | None = None
) -> MomentRestore:
    """Replace the (closed) live file by the replica's state at `moment`, verified like a
    snapshot and given `new_position` (a restore is a new state); the previous file is kept
    aside. `SnapshotNotFound` when the replica holds nothing at or before that moment."""
    with tempfile.TemporaryDirectory(prefix=".restore-", dir=db_path.parent) as folder:
        staged = Path(folder) / "moment.db"
        try:
            found = restore_from_replica(url, staged, timestamp=moment, env=env)
        except SnapshotError as exc:
            if not any(words in exc.message.lower() for words in NOTHING_AT_THAT_MOMENT):
                raise
            # Litestream finds no state for a moment after its newest transaction either:
            # that moment's state is the newest one
            newest = newest_moment(url, env)
            found = (
                newest is not None
                and newest <= moment
                and restore_from_replica(url, staged, env=env)
            )
        if not found:
            raise SnapshotNotFound(f"the replica holds no state at or before {moment}")
        try:
            verify_database(staged)
        except (ValueError, db.DatabaseError) as exc:
            raise SnapshotCorrupt(
                f"the replica's state at {moment} is not a sound SQLite "
                f"file ({exc}); the workspace file was not changed"
            ) from None
        rebase(staged, new_position, epoch_ms())
        carry_answers(db_path, staged)
        aside = swap_in(staged, db_path)
    log.info(
        "restored %s to its replica's state at %s (position %d)",
        db_path.parent.name,
        moment,
        new_position,
    )
    return {"moment": moment, "position": new_position, "aside": aside}
