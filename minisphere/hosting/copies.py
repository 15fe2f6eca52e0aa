"""Every byte of a workspace on a node's disk, and how it goes away.

Next to `workspace.db` a node can hold its WAL and shared-memory files, the seal a hibernation
left (`workspace.db-at-rest`, hosting/at_rest.py), the copy a restore set
aside (`workspace.db.pre-restore-*`, so an admin can undo a restore), an export's private
copy (`.export-*.db`) and a file SQLite could not read that nothing could restore yet
(`workspace.db.unreadable`). Each of them can hold text the tenant has since forgotten, or belong to
a workspace that was deleted or has moved to another node. This module names them all in one
place, so deletion, forget and the per-node sweep never miss one:

- `discard_copy` deletes a workspace's copy with everything around it (a dead generation, a
  stale copy left behind by a move);
- `drop_after_forget` deletes what a forget must reach beside the live file (the aside copies
  and export leftovers: both were taken before the forget);
- `sweep_node` runs on every node (the directory sends it) and deletes the folders of
  generations the directory has tombstoned and the stale copies of workspaces that now live
  elsewhere, skipping any folder a live host holds (`HostLock`). First it lets the node's
  replication daemon go of every file no live host holds: an actor that was killed (a wake
  abandoned by a delete, a crash) never unregistered its file, and the daemon would go on
  shipping it, putting a deleted workspace's history back in the store after its deletion.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import time
from pathlib import Path

from minisphere.durability.litestream_control import ReplicaControl
from minisphere.durability.replication.daemon import daemon_socket
from minisphere.durability.replication.locations import drop_local_history
from minisphere.durability.restores import ASIDE_MARK
from minisphere.engine.location import inspect_copy
from minisphere.errors import WorkspaceUnavailable
from minisphere.hosting.at_rest import SEAL_SUFFIX

log = logging.getLogger("minisphere.copies")
EXPORT_COPY_GLOB = ".export-*"
SIDE_SUFFIXES = ("-wal", "-shm", "-journal", SEAL_SUFFIX)
UNREADABLE_MARK = ".unreadable"  # a file SQLite could not read, kept while nothing restores it
# what a restore or a snapshot stages beside the file, left behind when its process was killed
STAGING_GLOBS = (".restore-*", ".snapshot-*", "*.from-replica")
LOCK_NAME = ".host.lock"
HOST_LOCK_WAIT_S = 30.0  # for the previous host of the folder to end (a process exit)
HOST_LOCK_POLL_S = 0.05


def _unlink(path: Path) -> bool:
    try:
        path.unlink()
        return True
    except FileNotFoundError:
        return False


def drop_asides(db_path: Path) -> int:
    """Delete the pre-restore copies of the file; returns how many files went."""
    return sum(_unlink(p) for p in db_path.parent.glob(f"{db_path.name}{ASIDE_MARK}*"))


def drop_export_copies(folder: Path) -> int:
    return sum(_unlink(p) for p in folder.glob(EXPORT_COPY_GLOB))


def drop_after_forget(db_path: Path) -> int:
    """What a forget must reach beside the live file: copies taken before it."""
    return drop_asides(db_path) + drop_export_copies(db_path.parent)


def staged_bytes(folder: Path) -> int:
    """Bytes that restores (and snapshots) have staged in the folder so far. It grows while a
    restore downloads: how a long one shows that it is getting somewhere."""
    total = 0
    for pattern in STAGING_GLOBS:
        for path in folder.glob(pattern):
            for found in path.rglob("*") if path.is_dir() else [path]:
                with contextlib.suppress(OSError):  # gone meanwhile: the restore moved on
                    total += found.stat().st_size if found.is_file() else 0
    return total


def drop_staging_leftovers(folder: Path) -> int:
    """Delete what killed restores and snapshots staged in the folder (each a full copy of the
    workspace, forgotten text included); only while no host works in it (its lock held)."""
    found = [p for pattern in STAGING_GLOBS for p in folder.glob(pattern)]
    for path in found:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            remove_database(path)
    return len(found)


def remove_database(db_path: Path) -> None:
    """Delete one SQLite file with its WAL, shared memory and journal."""
    for path in [db_path, *(Path(str(db_path) + s) for s in SIDE_SUFFIXES)]:
        _unlink(path)


def discard_copy(db_path: Path) -> None:
    """Delete a workspace copy: the file, its WAL and shared memory, its asides, exports, and
    the replication daemon's local history of it."""
    remove_database(db_path)
    remove_database(db_path.with_name(db_path.name + UNREADABLE_MARK))
    drop_after_forget(db_path)
    drop_local_history(db_path)


class HostLock:
    """An exclusive lock a host holds on its workspace folder while the file is open, so the
    node's sweep (another process) never deletes a copy in use, and two hosts on one node never
    open the same folder at once. A previous holder on its way out (a hibernated or killed
    actor) lets go when its process ends, so a new host waits a bounded time for it."""

    def __init__(self, folder: Path, wait_s: float = HOST_LOCK_WAIT_S):
        self._fd: int | None = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(self._fd)
                    self._fd = None
                    raise WorkspaceUnavailable(
                        f"another process on this node still holds {folder.name}; retry shortly"
                    ) from None
                time.sleep(HOST_LOCK_POLL_S)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the lock
            self._fd = None


def _held_by_a_host(folder: Path) -> bool:
    fd = _take_host_lock(folder)
    if fd is None:
        return True
    if fd >= 0:
        os.close(fd)
    return False


def _take_host_lock(folder: Path) -> int | None:
    """The folder's host lock taken without waiting: its descriptor (closing it lets go; -1
    when the folder has no lock file, so no host ever held it), None when a host holds it."""
    try:
        fd = os.open(folder / LOCK_NAME, os.O_RDWR)
    except FileNotFoundError:
        return -1
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def release_orphaned_registrations(root: str | Path, daemon_dir: str | Path | None) -> list[str]:
    """Unregister from the node's replication daemon (if one runs) every file under `root`
    that no live host holds; the folders (workspace ids) let go of."""
    if not daemon_dir or not daemon_socket(daemon_dir).exists():
        return []
    control = ReplicaControl(daemon_socket(daemon_dir))
    released = []
    try:
        for database in control.databases():
            path = Path(database.get("path") or "")
            if path.parent.parent == Path(root).resolve() and not _held_by_a_host(path.parent):
                control.unregister(path)
                released.append(path.parent.name)
    except Exception as exc:  # noqa: BLE001 - the next sweep tries again
        log.warning("node sweep: could not ask the replication daemon: %r", exc)
    finally:
        control.close()
    if released:
        log.info("node sweep: replication let go of %s (no live host holds them)", released)
    return released


def _dead(generation: str | None, dead_generations: list[str] | None) -> bool:
    """A copy of a deleted creation. One without a generation (made before generations, or
    by an offline import) names no creation: once its id has been deleted it is nobody's (no
    workspace made since lacks a generation), so it goes too."""
    if dead_generations is None:
        return False
    return generation is None or generation in dead_generations


def list_copies(root: str | Path, file_name: str = "workspace.db") -> dict[str, str]:
    """The workspace copies under `root` (a node's workspaces folder): id -> the creation
    (generation) each belongs to, '' for one that names none. What the directory needs to
    tell this node which of them belong to no live workspace."""
    root = Path(root)
    if not root.is_dir():
        return {}
    held = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        copy = inspect_copy(folder / file_name)
        if copy is not None:
            held[folder.name] = copy.generation or ""
    return held


def sweep_node(
    root: str | Path,
    node_id: str,
    tombstones: dict[str, list[str]],
    moved: dict[str, tuple[str | None, str | None, int]],
    file_name: str = "workspace.db",
    daemon_dir: str | None = None,
) -> list[str]:
    """Delete, under `root` (the node's workspaces folder), every copy the directory has given
    up on: a copy of a dead creation (`tombstones`: id -> dead generations), and a
    copy of a workspace that now lives on another node and is safely in the store (`moved`:
    id -> (generation, holding node, stored position), deleted when it is at or below the
    stored position). Folders a live host holds are skipped. Returns what was deleted."""
    root = Path(root)
    deleted: list[str] = []
    if not root.is_dir():
        return deleted
    release_orphaned_registrations(root, daemon_dir)
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        # decided and deleted under the host lock: a host that took it between a probe and
        # the deletion would have lost the copy it had just found
        lock = _take_host_lock(folder)
        if lock is None:
            continue
        try:
            drop_staging_leftovers(folder)
            copy = inspect_copy(folder / file_name)
            if copy is None:
                continue
            dead = _dead(copy.generation, tombstones.get(folder.name))
            generation, holder, stored = moved.get(folder.name, (None, None, -1))
            stale = (
                holder not in (None, node_id)
                and copy.generation == generation
                and copy.position <= stored
            )
            if dead:
                shutil.rmtree(folder, ignore_errors=True)
            elif stale:
                discard_copy(folder / file_name)
            else:
                continue
        finally:
            if lock >= 0:
                os.close(lock)
        log.info("node sweep: removed %s copy of %s", "deleted" if dead else "stale", folder.name)
        deleted.append(folder.name)
    return deleted
