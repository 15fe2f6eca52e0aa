"""File modes: everything the service writes (workspace files and their -wal/-shm, the control
plane, snapshots, the admin token) is private to the user it runs as. `restrict_file_modes()`
sets that up for a whole process and `ensure_private_dir()` makes (or tightens) a data folder."""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path

PRIVATE_UMASK = 0o077  # what a process of the service creates: owner only
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600

log = logging.getLogger("minisphere.settings")


def restrict_file_modes() -> int:
    """Make every file and folder this process creates from now on private to its user (files
    0600, folders 0700); returns the previous umask.

    Why a umask and not a mode on each open: most of the service's files are not created by our
    own `open` calls. SQLite creates the database file itself (0644 minus the umask) and then
    gives its -wal, -shm and -journal files the database's mode; the online backup API, the
    control plane, temporary copies and other libraries create theirs the same way. The process
    umask is the one setting every one of those creations obeys. Call it first thing in every
    process that writes data (the launcher, each actor), before any file is opened. It is
    process-wide (all threads); the previous value is returned so a test can put it back."""
    return os.umask(PRIVATE_UMASK)


def ensure_private_dir(path: str | os.PathLike[str]) -> Path:
    """`path` as a folder only its owner can enter (0700): created if missing (missing parents
    too, each 0700), tightened if it exists with group or other bits. A folder 0700 also shields
    files inside it that an older build created world-readable. A folder this user may not
    chmod (a volume's mount point owned by someone else) is left as it is, with a warning."""
    folder = Path(path)
    missing = []
    probe = folder
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for created in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process
            created.mkdir(mode=PRIVATE_DIR_MODE)
        _tighten(created)
    if not folder.is_dir():
        raise FileExistsError(f"{folder} exists and is not a folder")
    if not missing:
        _tighten(folder)
    return folder


def _tighten(folder: Path) -> None:
    try:
        mode = stat.S_IMODE(folder.stat().st_mode)
        if mode & ~PRIVATE_DIR_MODE & 0o777:
            Path(folder).chmod(PRIVATE_DIR_MODE)
    except PermissionError as exc:
        log.warning("cannot make %s private (mode 0700): %s", folder, exc)
