"""Small file helpers shared by the layers: streaming SHA-256 and fsync."""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

HASH_CHUNK_BYTES = 1024 * 1024  # files are hashed in chunks, never read whole


def sized_sha256(path: str | os.PathLike[str]) -> tuple[int, str]:
    """(size in bytes, SHA-256 hex) of a file's exact bytes."""
    digest, size = hashlib.sha256(), 0
    with Path(path).open("rb") as handle:
        while chunk := handle.read(HASH_CHUNK_BYTES):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    return sized_sha256(path)[1]


def fsync_file(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """Make a rename or a new file in `folder` durable (best effort: not every filesystem
    lets a directory be fsynced)."""
    with contextlib.suppress(OSError):
        fsync_file(Path(folder))
