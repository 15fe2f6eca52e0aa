"""A replicated workspace's file between two residencies: sealed when a hibernation has closed
it, and checked against the seal when a wake opens it again.

Hibernation closes a replicated file while the replication daemon still has it open, so the
daemon, not our last connection, folds the WAL in as it lets go, and its next registration
goes on from the history it already has (after a checkpoint of ours it copied the whole file
into a new history at every wake). The file a wake finds is therefore trusted by what it was
when it was closed, not by opening it: SQLite opens a main file cut short or overwritten while
nobody held it, and a lost page surfaces only when a query reaches it. The seal (size and
modification time of the file and of its WAL, written once the daemon let go) tells such a copy
apart, and the wake restores from the replica in its place. Modification time and size, not the
inode's change time: an operator's `chown` (a Kubernetes volume's fsGroup) changes that without
touching a byte.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from minisphere.files import write_in_one_step

SEAL_SUFFIX = "-at-rest"
WAL_SUFFIX = "-wal"


def _seal_path(path: Path) -> Path:
    return Path(str(path) + SEAL_SUFFIX)


def _fingerprint(path: Path) -> dict[str, list[int] | None]:
    """Size and modification time (ns) of the file and of its WAL (None: no such file)."""
    prints: dict[str, list[int] | None] = {}
    for name in (path.name, path.name + WAL_SUFFIX):
        try:
            stat = (path.parent / name).stat()
        except FileNotFoundError:
            prints[name] = None
        else:
            prints[name] = [stat.st_size, stat.st_mtime_ns]
    return prints


def seal(path: Path) -> None:
    """Record the closed file as it is now (durably: a node restarted while the workspace
    sleeps must still find the seal)."""
    write_in_one_step(_seal_path(path), json.dumps(_fingerprint(path)).encode())


def altered_since_sealed(path: Path) -> str | None:
    """What changed in the file or its WAL since the seal (None: nothing, or no seal: a file
    closed by a process that ended, or not replicated, is checked by opening it as before)."""
    try:
        sealed = json.loads(_seal_path(path).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    now = _fingerprint(path)
    changed = [name for name in sorted(set(sealed) | set(now)) if sealed.get(name) != now.get(name)]
    if not changed:
        return None
    return "changed while it was closed: " + ", ".join(
        f"{name} {sealed.get(name)} -> {now.get(name)} (size, mtime ns)" for name in changed
    )


def unseal(path: Path) -> None:
    """The file is open again (or was replaced): the seal describes it no more."""
    with contextlib.suppress(FileNotFoundError):
        _seal_path(path).unlink()
