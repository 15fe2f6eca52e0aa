"""Files the service creates are private to its user: the local snapshot store writes 0600
files in 0700 folders whatever the umask; under `restrict_file_modes()` a workspace file, its
WAL and SHM, the control plane and a restored file are 0600 and the folders 0700."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from minisphere.control.plane import ControlPlane
from minisphere.durability.restores import restore_snapshot
from minisphere.durability.snapshots.publish import take_snapshot
from minisphere.durability.stores import LocalDirSnapshotStore
from minisphere.engine.workspace import Workspace
from minisphere.settings import ensure_private_dir, restrict_file_modes
from tests.durability.helpers import fill

PERMISSIVE_UMASK = 0o022  # the usual default, which makes files 0644


def mode(path) -> int:
    return stat.S_IMODE(Path(path).stat().st_mode)


@pytest.fixture
def permissive_umask():
    previous = os.umask(PERMISSIVE_UMASK)
    yield
    os.umask(previous)


@pytest.fixture
def private_umask():
    previous = restrict_file_modes()
    yield
    os.umask(previous)


def store_paths(root: Path) -> tuple[list[Path], list[Path]]:
    files = [p for p in root.rglob("*") if p.is_file()]
    folders = [root, *(p for p in root.rglob("*") if p.is_dir())]
    return files, folders


def test_local_store_files_are_private_even_under_a_permissive_umask(tmp_path, permissive_umask):
    live = tmp_path / "workspace.db"
    fill(live, ["a private fact"])
    store = LocalDirSnapshotStore(tmp_path / "data" / "snapshots")
    version = take_snapshot(live, store, "ws-modes")["version"]
    files, folders = store_paths(tmp_path / "data" / "snapshots")
    assert len(files) == 2 and {mode(f) for f in files} == {0o600}
    assert {mode(f) for f in folders} == {0o700}
    assert mode(tmp_path / "data") == 0o700  # a parent the store created itself
    restored = tmp_path / "elsewhere" / "workspace.db"
    restore_snapshot(store, "ws-modes", restored, version)
    assert mode(restored) == 0o600


def test_everything_created_under_restrict_file_modes_is_private(tmp_path, private_umask):
    data = tmp_path / "data"
    folder = ensure_private_dir(data / "workspaces" / "ws-modes")
    ws = Workspace(folder / "workspace.db", synchronous="NORMAL")
    try:
        ws.capture("a fact nobody else may read")
        db = folder / "workspace.db"
        wal, shm = Path(f"{db}-wal"), Path(f"{db}-shm")
        assert wal.exists() and shm.exists()
        assert (mode(db), mode(wal), mode(shm)) == (0o600, 0o600, 0o600)
        control = ControlPlane(data / "control.db", synchronous="NORMAL")
        try:
            assert mode(data / "control.db") == 0o600
            assert mode(f"{data / 'control.db'}-wal") == 0o600
        finally:
            control.close()
        store = LocalDirSnapshotStore(data / "snapshots")
        take_snapshot(db, store, "ws-modes")
    finally:
        ws.close()
    files, folders = store_paths(data)
    assert files and {mode(f) for f in files} == {0o600}, {f: oct(mode(f)) for f in files}
    assert {mode(f) for f in folders} == {0o700}


def test_ensure_private_dir_tightens_existing_folders_and_creates_private_parents(
    tmp_path, permissive_umask
):
    existing = tmp_path / "old-data"
    existing.mkdir(mode=0o755)
    existing.chmod(0o755)
    (existing / "workspace.db").write_text("written by an older build")
    assert ensure_private_dir(existing) == existing and mode(existing) == 0o700
    tmp_path.chmod(0o755)
    fresh = tmp_path / "a" / "b" / "c"
    ensure_private_dir(fresh)
    assert [mode(p) for p in (tmp_path / "a", tmp_path / "a" / "b", fresh)] == [0o700] * 3
    assert mode(tmp_path) == 0o755  # a parent that already existed is left alone
    with pytest.raises(FileExistsError):
        ensure_private_dir(existing / "workspace.db")


def test_restrict_file_modes_returns_the_previous_umask(permissive_umask):
    previous = restrict_file_modes()
    try:
        assert previous == PERMISSIVE_UMASK and os.umask(previous) == 0o077
    finally:
        os.umask(PERMISSIVE_UMASK)
