"""The copy a snapshot stores: the live file copied with `VACUUM INTO` (one consistent read,
no free pages, no old bytes in any page, idempotency answers past their keep time left out),
then gzip-compressed."""

from __future__ import annotations

import contextlib
import gzip
import shutil
from pathlib import Path

from minisphere.durability.constants import SNAPSHOT_COPY_CHUNK_BYTES, SNAPSHOT_GZIP_LEVEL
from minisphere.engine import db
from minisphere.engine.clock import epoch_ms
from minisphere.engine.idempotency import IDEMPOTENCY_KEEP_MS
from minisphere.engine.location import read_location
from minisphere.engine.scrub import mark_built_clean


def compacted_copy(source_path: Path, target: Path) -> tuple[int, int, int]:
    """Copy the live file into `target`, compacted (one consistent read), without idempotency
    answers past their keep time; returns (schema, entries, position)."""
    source = db.connect(source_path, readonly=True)
    try:
        # VACUUM INTO builds the copy with the source connection's secure_delete: without it,
        # rows moved while the copy's b-trees grew leave old bytes in its pages' free gaps,
        # which a later forget (in a file restored from this copy) could not reach
        source.execute("PRAGMA secure_delete = ON")
        source.execute("VACUUM INTO ?", (str(target),))
        dest = db.sqlite3.connect(str(target), isolation_level=None)
        try:
            dest.execute("PRAGMA journal_mode = DELETE")
            dest.execute("PRAGMA secure_delete = ON")
            schema = dest.execute(
                "SELECT COALESCE(MAX(version), 0) FROM schema_migrations"
            ).fetchone()[0]
            _drop_expired_keys(dest)
            with contextlib.suppress(db.OperationalError):  # a file before workspace_meta
                mark_built_clean(dest)
            try:
                entries = dest.execute("SELECT count(*) FROM entries").fetchone()[0]
            except db.OperationalError:
                entries = 0
            position = read_location(dest).position
        finally:
            dest.close()
    finally:
        source.close()
    return int(schema), int(entries), int(position)


def _drop_expired_keys(copy: db.sqlite3.Connection) -> None:
    """Expired idempotency answers stay out of the stored copy (zeroed, not just unlinked)."""
    with contextlib.suppress(db.OperationalError):  # a file from before idempotency keys
        copy.execute(
            "DELETE FROM idempotency_keys WHERE at < ?", (epoch_ms() - IDEMPOTENCY_KEEP_MS,)
        )


def compress(raw: Path, packed: Path) -> None:
    with (
        raw.open("rb") as src,
        packed.open("wb") as out,
        gzip.GzipFile(fileobj=out, mode="wb", compresslevel=SNAPSHOT_GZIP_LEVEL, mtime=0) as gz,
    ):
        shutil.copyfileobj(src, gz, SNAPSHOT_COPY_CHUNK_BYTES)
