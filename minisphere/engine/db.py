"""SQLite connections and a workspace file's schema migrations. The migration runner itself
knows no file: the control plane runs its own migrations through it (control/schema.py).

The stdlib `sqlite3` of some Pythons cannot load extensions (sqlite-vec), so the engine prefers
`pysqlite3` (a drop-in DB-API module bundling a current SQLite) and falls back to the stdlib.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minisphere.engine.constants import (
    BUSY_TIMEOUT_MS,
    DEFAULT_SYNCHRONOUS,
    VECTOR_BINDING_META_KEY,
)
from minisphere.errors import InvalidArgument, SchemaTooNew

# `db.sqlite3` is the driver module for the other layers too (a connection without the engine's
# pragmas): hence `as sqlite3`, which marks it exported
if TYPE_CHECKING:  # pysqlite3 ships no type information; its API is the stdlib module's
    import sqlite3 as sqlite3
else:
    try:  # pragma: no cover - which branch runs depends on the machine
        import pysqlite3.dbapi2 as sqlite3
    except ImportError:  # pragma: no cover
        import sqlite3

SYNCHRONOUS_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")

IntegrityError = sqlite3.IntegrityError
OperationalError = sqlite3.OperationalError
DatabaseError = sqlite3.DatabaseError
Connection = sqlite3.Connection


def connect(
    path: str | Path, *, synchronous: str = DEFAULT_SYNCHRONOUS, readonly: bool = False
) -> Connection:
    """Open a connection in autocommit mode (transactions are explicit) with WAL and FKs on."""
    if synchronous not in SYNCHRONOUS_MODES:
        raise InvalidArgument(
            f"synchronous must be one of {SYNCHRONOUS_MODES}, got {synchronous!r}"
        )
    if readonly:
        conn = sqlite3.connect(
            f"file:{path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )
    else:
        conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if not readonly:
            conn.execute("PRAGMA journal_mode = WAL")
            # freed pages are zeroed: a forgotten entry's text does not linger in free pages
            conn.execute("PRAGMA secure_delete = ON")
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
        load_vector_extension_if_bound(conn)
    except Exception:
        conn.close()
        raise
    return conn


def read_meta(conn: Connection, key: str) -> str | None:
    """What the file keeps under `key` in `workspace_meta`, or None."""
    row = conn.execute("SELECT value FROM workspace_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def write_meta(conn: Connection, key: str, value: str | None) -> None:
    """Keep `value` under `key` in `workspace_meta` (None: the key goes)."""
    if value is None:
        conn.execute("DELETE FROM workspace_meta WHERE key = ?", (key,))
    else:
        conn.execute(
            "INSERT OR REPLACE INTO workspace_meta(key, value) VALUES (?, ?)", (key, value)
        )


def read_vector_binding(conn: Connection) -> dict[str, Any] | None:
    """The vector binding the file records ({"provider", "dim", "boundAt"}), or None. Plain SQL:
    no extension, no model."""
    value = read_meta(conn, VECTOR_BINDING_META_KEY)
    binding: dict[str, Any] | None = json.loads(value) if value is not None else None
    return binding


def load_vector_extension_if_bound(conn: Connection) -> None:
    """A file with the optional vector binding has triggers into its sqlite-vec table, so every
    connection to it (writer, readers, maintenance) needs the extension; others never load it."""
    try:
        bound = read_vector_binding(conn) is not None
    except OperationalError:  # a new file, or not a workspace file (e.g. the control plane)
        return
    if bound:
        load_sqlite_vec(conn)


def load_sqlite_vec(conn: Connection) -> None:
    import sqlite_vec

    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:
        conn.enable_load_extension(False)


WORKSPACE_MIGRATIONS = "minisphere.engine.migrations"
Migrations = tuple[tuple[int, str, str], ...]


def available_migrations() -> Migrations:
    """(version, name, sql) for every migration of a workspace file, in order."""
    return shipped_migrations(WORKSPACE_MIGRATIONS)


@functools.cache
def shipped_migrations(package: str) -> Migrations:
    """(version, name, sql) for every migration shipped in `package`, in order. Read once per
    process: the files ship with the build, and reading them again would cost every workspace
    opened (every wake)."""
    found = []
    for item in resources.files(package).iterdir():
        match = _MIGRATION_NAME.match(item.name)
        if match:
            found.append((int(match.group(1)), item.name, item.read_text(encoding="utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if versions != list(range(1, len(versions) + 1)):
        raise RuntimeError(f"migration versions must be contiguous from 1, found {versions}")
    return tuple(found)


def schema_version(conn: Connection) -> int:
    conn.execute("""CREATE TABLE IF NOT EXISTS schema_migrations (
                        version    INTEGER PRIMARY KEY,
                        name       TEXT    NOT NULL,
                        applied_at INTEGER NOT NULL)""")
    row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
    return int(row[0])


def migrate(conn: Connection, now_ms: int, up_to: int | None = None) -> int:
    """Apply a workspace file's pending migrations (see `apply_migrations`)."""
    return apply_migrations(conn, available_migrations(), now_ms, up_to)


def apply_migrations(
    conn: Connection, migrations: Migrations, now_ms: int, up_to: int | None = None
) -> int:
    """Apply the pending `migrations` (up to version `up_to`, default all: tests build files
    as an older build left them), each in its own transaction. Returns the resulting version.
    A file whose schema is newer than anything this build ships is refused, not touched."""
    newest_known = migrations[-1][0] if migrations else 0
    current = schema_version(conn)
    if current > newest_known:
        raise SchemaTooNew(
            f"{Path(conn_path(conn)).name or 'the file'} has schema version {current} but this "
            f"build knows only up to {newest_known}; upgrade Mini-Sphere to open it"
        )
    for version, name, sql in migrations:
        if version <= current or (up_to is not None and version > up_to):
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in split_statements(sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
                (version, name, now_ms),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        current = version
    return current


def conn_path(conn: Connection) -> str:
    """The file behind a connection ('' for an in-memory database)."""
    row = conn.execute("PRAGMA database_list").fetchone()
    return str(row[2]) if row else ""


def split_statements(sql: str) -> list[str]:
    """Split a migration script into complete statements (handles BEGIN…END trigger bodies)."""
    statements, buffer = [], ""
    for line in sql.splitlines(keepends=True):
        if not buffer and (not line.strip() or line.lstrip().startswith("--")):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        raise RuntimeError(f"incomplete SQL statement in migration: {buffer[:80]!r}")
    return statements
