"""The control plane's schema: its migrations (`control/migrations/`), applied by the engine's
SQLite migration runner, which knows no file of its own."""

from __future__ import annotations

from minisphere.engine import db

CONTROL_MIGRATIONS = "minisphere.control.migrations"


def control_migrations() -> db.Migrations:
    """(version, name, sql) for every migration of the control plane's file, in order."""
    return db.shipped_migrations(CONTROL_MIGRATIONS)


def migrate_control_plane(conn: db.Connection, now_ms: int, up_to: int | None = None) -> int:
    """Apply the control plane's pending migrations (up to version `up_to`, default all).
    Returns the resulting version; a file newer than this build is refused, not touched."""
    return db.apply_migrations(conn, control_migrations(), now_ms, up_to)
