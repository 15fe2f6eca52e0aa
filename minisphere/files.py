"""Small file helpers shared by the layers: streaming SHA-256, fsync, and a file replaced in one
step."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

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


@contextlib.contextmanager
def replaced_in_one_step(target: Path, mode: int = 0o644) -> Iterator[BinaryIO]:
    """A handle on a temporary file beside `target`: on a clean exit its bytes are fsynced and
    renamed over `target` (the folder fsynced too), so a reader or a crash sees the old file or
    the new one, never a part; on an error the temporary file is removed. `mode` is set on the
    handle itself: a left-over temporary file of an earlier crash keeps its old mode."""
    staged = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with os.fdopen(os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "wb") as out:
            os.fchmod(out.fileno(), mode)
            yield out
            out.flush()
            os.fsync(out.fileno())
        staged.replace(target)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)


def write_in_one_step(target: Path, data: bytes, mode: int = 0o644) -> None:
    """`data` as the whole of `target`, durably and in one step (`replaced_in_one_step`)."""
    with replaced_in_one_step(target, mode) as out:
        out.write(data)
