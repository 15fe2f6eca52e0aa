"""SQLite connections and schema migrations.

The stdlib `sqlite3` of some Pythons cannot load extensions (sqlite-vec), so the engine prefers
`pysqlite3` (a drop-in DB-API module bundling a current SQLite) and falls back to the stdlib.
"""
from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from .constants import BUSY_TIMEOUT_MS, DEFAULT_SYNCHRONOUS, VECTOR_BINDING_META_KEY
from .errors import InvalidArgument, SchemaTooNew

try:  # pragma: no cover - which branch runs depends on the machine
    import pysqlite3.dbapi2 as sqlite3
except ImportError:  # pragma: no cover
    import sqlite3  # type: ignore[no-redef]

SYNCHRONOUS_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")

IntegrityError = sqlite3.IntegrityError
OperationalError = sqlite3.OperationalError
DatabaseError = sqlite3.DatabaseError


def connect(path: str | Path, *, synchronous: str = DEFAULT_SYNCHRONOUS, readonly: bool = False):
    """Open a connection in autocommit mode (transactions are explicit) with WAL and FKs on."""
    if synchronous not in SYNCHRONOUS_MODES:
        raise InvalidArgument(f"synchronous must be one of {SYNCHRONOUS_MODES}, got {synchronous!r}")
    if readonly:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None,
                               check_same_thread=False)
    else:
        conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if not readonly:
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
        load_vector_extension_if_bound(conn)
    except Exception:
        conn.close()
        raise
    return conn


def load_vector_extension_if_bound(conn) -> None:
    """A file with the optional vector binding has triggers into its sqlite-vec table, so every
    connection to it (writer, readers, maintenance) needs the extension; others never load it."""
    try:
        bound = conn.execute("SELECT 1 FROM workspace_meta WHERE key = ?",
                             (VECTOR_BINDING_META_KEY,)).fetchone()
    except OperationalError:  # a new file, or not a workspace file (e.g. the control plane)
        return
    if bound:
        load_sqlite_vec(conn)


def load_sqlite_vec(conn) -> None:
    import sqlite_vec
    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:
        conn.enable_load_extension(False)


def available_migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) for every packaged migration, in order."""
    found = []
    for item in resources.files("minisphere.migrations").iterdir():
        match = _MIGRATION_NAME.match(item.name)
        if match:
            found.append((int(match.group(1)), item.name, item.read_text(encoding="utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if versions != list(range(1, len(versions) + 1)):
        raise RuntimeError(f"migration versions must be contiguous from 1, found {versions}")
    return found


def schema_version(conn) -> int:
    conn.execute("""CREATE TABLE IF NOT EXISTS schema_migrations (
                        version    INTEGER PRIMARY KEY,
                        name       TEXT    NOT NULL,
                        applied_at INTEGER NOT NULL)""")
    row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
    return int(row[0])


def migrate(conn, now_ms: int) -> int:
    """Apply pending migrations, each in its own transaction. Returns the resulting version.

    A file whose schema is newer than anything this build ships is refused, not touched.
    """
    migrations = available_migrations()
    newest_known = migrations[-1][0] if migrations else 0
    current = schema_version(conn)
    if current > newest_known:
        raise SchemaTooNew(
            f"workspace file has schema version {current} but this build knows only up to "
            f"{newest_known}; upgrade Mini-Sphere to open it")
    for version, name, sql in migrations:
        if version <= current:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in split_statements(sql):
                conn.execute(statement)
            conn.execute("INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
                         (version, name, now_ms))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        current = version
    return current


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
