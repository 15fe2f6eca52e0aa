"""Schema: migrations table, idempotent reopen, refusing a newer schema, WAL, pragmas, FTS."""

import hashlib
from pathlib import Path

import pytest

from minisphere.engine import db
from minisphere.engine.clock import ManualClock
from minisphere.engine.workspace import Workspace
from minisphere.errors import InvalidArgument, SchemaTooNew
from tests.engine.helpers import fts_ids, snapshot


def file_digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def open_ws(path, clock=None, **kwargs):
    return Workspace(path, clock=clock or ManualClock(), synchronous="NORMAL", **kwargs)


def test_migrations_table_filled(ws, clock):
    migrations = db.available_migrations()
    assert migrations and migrations[0][:2] == (1, "0001_initial.sql")
    rows = ws.conn.execute(
        "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
    ).fetchall()
    assert rows == [(v, name, clock.now_ms()) for v, name, _ in migrations]
    assert ws.schema_version == migrations[-1][0]


def test_contract_tables_exist(ws):
    names = {r[0] for r in ws.conn.execute("SELECT name FROM sqlite_master")}
    assert {
        "entries",
        "tags",
        "edges",
        "revisions",
        "entries_fts",
        "schema_migrations",
        "edges_src",
        "edges_dst",
        "entries_status",
        "entries_kind",
        "entries_volatility",
    } <= names


def test_reopen_is_idempotent(tmp_path):
    path = tmp_path / "reopen.db"
    clock = ManualClock()
    first = open_ws(path, clock)
    a = first.capture("persisted across reopen", tags=["keep"])["id"]
    b = first.capture("second persisted entry")["id"]
    first.link(a, b, "relates_to")
    first.update(b, "second persisted entry, revised")
    before = snapshot(first)
    first.close()
    for _ in range(3):
        clock.advance(days=1)
        again = open_ws(path, clock)
        assert snapshot(again) == before  # nothing re-applied, applied_at unchanged
        assert again.schema_version == db.available_migrations()[-1][0]
        again.close()
    last = open_ws(path, clock)
    assert last.get_entry(a)["tags"] == ["keep"]
    assert last.get_entry(b)["revisionCount"] == 1
    assert fts_ids(last, "persisted") == [a, b]
    last.close()


def make_future_file(path) -> None:
    ws = open_ws(path)
    ws.capture("written by a newer build")
    newest = db.available_migrations()[-1][0]
    ws.conn.execute(
        "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
        (newest + 7, f"{newest + 7:04d}_from_the_future.sql", 0),
    )
    ws.close()


def test_newer_schema_is_refused_and_untouched(tmp_path):
    path = tmp_path / "future.db"
    make_future_file(path)
    digest, listing = file_digest(path), sorted(p.name for p in tmp_path.iterdir())
    newest = db.available_migrations()[-1][0]
    with pytest.raises(SchemaTooNew) as caught:
        open_ws(path)
    message = str(caught.value)
    assert f"schema version {newest + 7}" in message
    assert f"only up to {newest}" in message
    assert "upgrade" in message
    assert caught.value.code == "schema_too_new"
    assert file_digest(path) == digest
    assert sorted(p.name for p in tmp_path.iterdir()) == listing  # no stray -wal/-shm left behind


def _descriptors_on(path: Path) -> int:
    """This process's open descriptors on the database file or its -wal, -shm and -journal.
    Only these: a count of every descriptor moves with whatever else the process runs."""
    real = str(path.resolve())
    files = {real, f"{real}-wal", f"{real}-shm", f"{real}-journal"}
    count = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            count += str(fd.readlink()) in files
        except OSError:  # closed since it was listed
            continue
    return count


def test_refused_open_does_not_leak_connections(tmp_path):
    path = tmp_path / "future.db"
    make_future_file(path)
    assert _descriptors_on(path) == 0
    for _ in range(30):
        with pytest.raises(SchemaTooNew):
            open_ws(path)
    assert _descriptors_on(path) == 0


def test_failed_migration_rolls_back_alone(tmp_path, monkeypatch):
    real = db.available_migrations()
    path = tmp_path / "broken.db"
    open_ws(path).close()  # the real migrations are applied and committed
    broken = [
        *real,
        (
            len(real) + 1,
            f"{len(real) + 1:04d}_broken.sql",
            "CREATE TABLE half_done (x INTEGER);\n"
            "INSERT INTO half_done VALUES (1);\n"
            "INSERT INTO no_such_table VALUES (1);\n",
        ),
    ]
    monkeypatch.setattr(db, "available_migrations", lambda: broken)
    with pytest.raises(db.OperationalError):
        open_ws(path)
    monkeypatch.undo()
    ws = open_ws(path)
    try:
        assert ws.conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == len(
            real
        )
        assert (
            ws.conn.execute(
                "SELECT COUNT(*) FROM sqlite_master WHERE name = 'half_done'"
            ).fetchone()[0]
            == 0
        )
    finally:
        ws.close()


def test_wal_mode_and_pragmas(ws, tmp_path):
    assert ws.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert ws.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert ws.conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL in the fixture
    # WAL is a property of the file: a plain new connection sees it too
    other = db.sqlite3.connect(str(ws.path))
    try:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        other.close()


def test_default_synchronous_is_full(tmp_path):
    ws = Workspace(tmp_path / "durable.db", clock=ManualClock())
    try:
        assert ws.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    finally:
        ws.close()


def test_bad_synchronous_mode_refused(tmp_path):
    with pytest.raises(InvalidArgument, match="synchronous"):
        Workspace(tmp_path / "x.db", synchronous="SOMETIMES")
    assert not (tmp_path / "x.db").exists()


def test_fts_tokenizer_stems_english_and_folds_accents(ws):
    stemmed = ws.capture("We decided to migrate the billing services")["id"]
    accented = ws.capture("Réunion at the Café Müller")["id"]
    assert fts_ids(ws, "decide") == [stemmed]
    assert fts_ids(ws, "migrating") == [stemmed]
    assert fts_ids(ws, "service") == [stemmed]
    assert fts_ids(ws, "cafe") == [accented]
    assert fts_ids(ws, "MULLER") == [accented]


def test_fts_index_passes_integrity_check_after_writes(ws):
    a = ws.capture("alpha content")["id"]
    ws.append(a, "beta addition")
    ws.update(a, "gamma replacement")
    b = ws.capture("delta content")["id"]
    ws.forget(b)
    ws.conn.execute("INSERT INTO entries_fts(entries_fts, rank) VALUES ('integrity-check', 1)")
    assert fts_ids(ws, "gamma") == [a]
    assert fts_ids(ws, "alpha") == fts_ids(ws, "beta") == fts_ids(ws, "delta") == []


def test_edges_table_enforces_canonical_relates_to(ws):
    """Defence in depth: even raw SQL cannot store relates_to the wrong way round."""
    a = ws.capture("first")["id"]
    b = ws.capture("second")["id"]
    lo, hi = sorted([a, b])
    with pytest.raises(db.IntegrityError):
        ws.conn.execute(
            "INSERT INTO edges(src, dst, type, weight, provenance, created_at, "
            "updated_at) VALUES (?, ?, 'relates_to', 1, 'explicit', 0, 0)",
            (hi, lo),
        )
