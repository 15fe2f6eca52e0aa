"""Where one copy of a workspace stands: its generation, its fencing epoch and its position.

A workspace moves between nodes, and each node keeps its own copy of the file on its own disk.
Three numbers, stored in the file itself (the `location` table) and carried by every snapshot
of it, let a host decide whether the copy in front of it may be opened:

- the *generation* names the creation of the workspace id the copy belongs to: a copy of a
  deleted workspace must never be opened for a new workspace that reuses the id;
- the *position* counts the committed transactions that changed the memory: a copy whose
  position is below the newest one the directory knows of is stale (the workspace was written
  elsewhere since), and opening it would silently lose acknowledged writes;
- the *epoch* is a fencing token that grows with every activation: a host stamps its epoch
  into the file when it opens it, and checks it in every write transaction, so a host that an
  owner with a higher epoch has replaced cannot write into a file they share.

Plain SQLite; the host decides what to do with the answers (minisphere/hosting/host.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from minisphere.engine import db
from minisphere.errors import WorkspaceFenced


@dataclass(frozen=True)
class CopyLocation:
    generation: str | None
    epoch: int
    position: int


def read_location(conn: db.Connection) -> CopyLocation:
    """The copy's location (a file whose schema predates it reads as generation None, epoch 0,
    position 0)."""
    try:
        row = conn.execute("SELECT generation, epoch, position FROM location").fetchone()
    except db.OperationalError:  # no such table: migrated only up to before it
        row = None
    return CopyLocation(*row) if row else CopyLocation(None, 0, 0)


def inspect_copy(path: str | Path) -> CopyLocation | None:
    """The location of the file at `path` without changing it (None: no file, or not a
    database this build can read: the caller treats both as no usable copy)."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        conn = db.connect(path, readonly=True)
    except db.DatabaseError:
        return None
    try:
        return read_location(conn)
    except db.DatabaseError:
        return None
    finally:
        conn.close()


def claim(conn: db.Connection, generation: str | None, epoch: int) -> CopyLocation:
    """Stamp this host's generation and epoch into the file (inside the caller's transaction).
    Refused with `WorkspaceFenced` when the file already carries a higher epoch: a newer owner
    opened it. Returns the location after the claim."""
    current = read_location(conn)
    if epoch < current.epoch:
        raise WorkspaceFenced(
            f"the file is held by epoch {current.epoch}; this host has "
            f"epoch {epoch} and must not open it"
        )
    conn.execute(
        "UPDATE location SET generation = COALESCE(?, generation), epoch = ?", (generation, epoch)
    )
    return CopyLocation(
        generation if generation is not None else current.generation, epoch, current.position
    )


def check_fence(conn: db.Connection, epoch: int) -> None:
    """Inside a write transaction: refuse it when a newer owner has stamped a higher epoch."""
    held = conn.execute("SELECT epoch FROM location").fetchone()[0]
    if held > epoch:
        raise WorkspaceFenced(
            f"workspace taken over by epoch {held}; this writer has epoch {epoch} and wrote nothing"
        )


def advance(conn: db.Connection) -> int:
    """Count one committed change of the memory (inside the transaction that makes it);
    returns the new position."""
    position: int = conn.execute(
        "UPDATE location SET position = position + 1 RETURNING position"
    ).fetchone()[0]
    return position


def rebase(path: str | Path, position: int, now_ms: int) -> None:
    """Give the closed, self-contained file at `path` (a verified snapshot about to become the
    live state again) the position `position`: a restore to an older version is a new state of
    the workspace, so it must rank above every position the workspace has had, or a later move
    would take it for stale. Migrates the file first when it predates the location table."""
    conn = db.sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA secure_delete = ON")  # the file's pages stay free of old rows
        db.migrate(conn, now_ms)
        conn.execute("UPDATE location SET position = ?", (position,))
    finally:
        conn.close()


@contextmanager
def fenced_write(conn: db.Connection, epoch: int | None) -> Iterator[db.Connection]:
    """BEGIN IMMEDIATE … COMMIT, rolled back on any failure (the caller holds the writer's
    lock); with an `epoch`, the write first checks that no newer owner has taken over."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if epoch is not None:
            check_fence(conn, epoch)
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    try:
        conn.execute("COMMIT")
    except BaseException:
        # a COMMIT that fails (disk full, I/O error) may leave the transaction open: close
        # it, so nothing of it is committed later by accident
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
