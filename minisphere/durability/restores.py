"""Restoring a workspace file from a snapshot version.

A restore downloads a version, checks size and checksum of the compressed bytes, decompresses,
checks size and checksum of the raw bytes, opens it and requires `PRAGMA integrity_check` to
answer `ok` -- only then is the live file swapped (the live file is checkpointed and kept
aside as `<file>.pre-restore-<stamp>`, stale `-wal`/`-shm` are removed, and the verified file
is renamed into place). Any failed check raises `SnapshotCorrupt` and leaves the live file as
it was. The caller must have closed every connection to the live file before a restore.

A missing file on a new node is restored from the newest version that verifies
(`restore_latest_good`): an older good version beats none.
"""

from __future__ import annotations

import gzip
import logging
import os
import shutil
import tempfile
import time
import zlib
from pathlib import Path
from typing import NotRequired, TypedDict

from minisphere.durability.constants import RESTORE_ASIDE_KEEP, SNAPSHOT_COPY_CHUNK_BYTES
from minisphere.durability.snapshots.layout import blob_key, list_versions, version_seq
from minisphere.durability.snapshots.manifest import Manifest, read_manifest
from minisphere.durability.snapshots.pruning import prune
from minisphere.durability.snapshots.publish import publish_file
from minisphere.durability.stores import SnapshotStore
from minisphere.engine import db
from minisphere.engine.clock import epoch_ms
from minisphere.engine.idempotency import carry_answers
from minisphere.engine.location import rebase
from minisphere.errors import SnapshotCorrupt, SnapshotError, SnapshotNotFound
from minisphere.files import fsync_dir, fsync_file, sized_sha256
from minisphere.settings import SNAPSHOT_KEEP_VERSIONS
from minisphere.wire.residency import SkippedVersion
from minisphere.wire.stored_states import Restored

log = logging.getLogger("minisphere.snapshots")
ASIDE_MARK = ".pre-restore-"
LIVE_FILE_MODE = 0o600  # a restored workspace file is private to the service


class SnapshotRestore(TypedDict):
    """What a restore did: the version restored, its manifest, where the previous file went,
    and the manifest of the newest version it was published again as (None unless asked)."""

    version: str
    manifest: Manifest
    aside: str | None
    tookMs: float
    published: Manifest | None
    skipped: NotRequired[list[SkippedVersion]]  # `restore_latest_good` only


def restored_answer(workspace_id: str, restore: SnapshotRestore) -> Restored:
    """An admin restore's answer (the HTTP `Restored` shape), from a published restore."""
    assert restore["published"] is not None  # an admin restore always publishes
    return {
        "workspace": workspace_id,
        "version": restore["version"],
        "entryCount": restore["manifest"].get("entryCount"),
        "previousFileKeptAt": restore["aside"],
        "tookMs": restore["tookMs"],
        "newestVersion": restore["published"]["version"],
    }


def _corrupt(workspace_id: str, version: str, why: str) -> SnapshotCorrupt:
    return SnapshotCorrupt(
        f"snapshot {workspace_id}@{version} refused: {why}; the workspace file was not changed"
    )


def _decompress(packed: Path, raw: Path) -> None:
    with gzip.open(packed, "rb") as gz, raw.open("wb") as out:
        shutil.copyfileobj(gz, out, SNAPSHOT_COPY_CHUNK_BYTES)


def verify_database(path: Path) -> int:
    """`PRAGMA integrity_check` must be ok; returns the schema version."""
    conn = db.sqlite3.connect(str(path), isolation_level=None)
    try:
        rows = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
        if rows != ["ok"]:
            raise ValueError("integrity_check: " + "; ".join(map(str, rows[:3])))
        schema = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[
            0
        ]
    finally:
        conn.close()
    return int(schema)


def fetch_verified(
    store: SnapshotStore, workspace_id: str, version: str, folder: Path
) -> tuple[Path, Manifest]:
    """Download `version` into `folder` and verify it completely; returns (file, manifest)."""
    manifest = read_manifest(store, workspace_id, version)
    packed, raw = folder / "restore.db.gz", folder / "restore.db"
    store.get_file(blob_key(workspace_id, version), packed)
    size, sha = sized_sha256(packed)
    if size != manifest["compressedBytes"]:
        raise _corrupt(
            workspace_id,
            version,
            f"truncated or padded: {size} bytes stored, "
            f"manifest says {manifest['compressedBytes']}",
        )
    if sha != manifest["compressedSha256"]:
        raise _corrupt(workspace_id, version, "checksum mismatch of the compressed bytes")
    try:
        _decompress(packed, raw)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise _corrupt(workspace_id, version, f"does not decompress ({exc})") from None
    except OSError as exc:  # the disk here, not the snapshot (e.g. no space left)
        raise SnapshotError(
            f"cannot decompress snapshot {workspace_id}@{version} into {folder}: {exc}"
        ) from None
    size, sha = sized_sha256(raw)
    if size != manifest["rawBytes"] or sha != manifest["rawSha256"]:
        raise _corrupt(workspace_id, version, "checksum mismatch of the decompressed file")
    try:
        schema = verify_database(raw)
    except (ValueError, db.DatabaseError) as exc:
        raise _corrupt(workspace_id, version, f"not a sound SQLite file ({exc})") from None
    newest = db.available_migrations()[-1][0]
    if schema > newest:
        raise SnapshotError(
            f"snapshot {workspace_id}@{version} has schema {schema}; this "
            f"build knows up to {newest}"
        )
    for suffix in ("-wal", "-shm", "-journal"):
        Path(str(raw) + suffix).unlink(missing_ok=True)
    return raw, manifest


def _checkpoint(path: Path) -> None:
    """Fold the live file's WAL into it (best effort) so the file alone is complete."""
    try:
        conn = db.sqlite3.connect(str(path), isolation_level=None)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
    except db.DatabaseError as exc:
        log.warning("could not checkpoint %s before restore: %s", path, exc)


def _prune_asides(db_path: Path, keep: int) -> None:
    asides = sorted(
        p
        for p in db_path.parent.glob(f"{db_path.name}{ASIDE_MARK}*")
        if not p.name.endswith(("-wal", "-shm"))
    )
    for old in asides[:-keep] if keep > 0 else asides:
        for path in (old, Path(str(old) + "-wal"), Path(str(old) + "-shm")):
            path.unlink(missing_ok=True)


def swap_in(verified: Path, db_path: Path, *, keep_asides: int = RESTORE_ASIDE_KEEP) -> str | None:
    """Put `verified` in place of the (closed) live file; returns where the old one went."""
    aside = None
    if db_path.exists():
        _checkpoint(db_path)
        aside = db_path.with_name(f"{db_path.name}{ASIDE_MARK}{time.time_ns()}")
        try:
            os.link(db_path, aside)
        except OSError:
            shutil.copy2(db_path, aside)
        wal = Path(str(db_path) + "-wal")
        if wal.exists():  # not folded in: keep it with its file
            wal.replace(Path(str(aside) + "-wal"))
    for suffix in ("-wal", "-shm", "-journal"):
        Path(str(db_path) + suffix).unlink(missing_ok=True)
    verified.chmod(LIVE_FILE_MODE)
    fsync_file(verified)
    verified.replace(db_path)
    fsync_dir(db_path.parent)
    _prune_asides(db_path, keep_asides)
    return str(aside) if aside else None


def _chosen_version(
    store: SnapshotStore, workspace_id: str, version: str | None, existing: list[str]
) -> str:
    """`version` checked for its form, or the newest of `existing` when None."""
    if version is not None:
        version_seq(version)
        return version
    if not existing:
        raise SnapshotNotFound(f"workspace {workspace_id} has no snapshot in {store.description}")
    return existing[-1]


def _publish_restored(
    verified: Path,
    store: SnapshotStore,
    workspace_id: str,
    existing: list[str],
    version: str,
    manifest: Manifest,
    new_position: int | None,
) -> Manifest:
    """The verified copy stored again as the newest version, naming the one it restores."""
    return publish_file(
        verified,
        store,
        workspace_id,
        existing,
        reason="restore",
        schema=manifest.get("schemaVersion") or 0,
        entries=manifest.get("entryCount") or 0,
        restored_from=version,
        position=new_position or manifest.get("position") or 0,
    )


def restore_snapshot(
    store: SnapshotStore,
    workspace_id: str,
    db_path: str | Path,
    version: str | None = None,
    *,
    publish: bool = False,
    keep: int = SNAPSHOT_KEEP_VERSIONS,
    new_position: int | None = None,
) -> SnapshotRestore:
    """Replace the (closed) workspace file by a verified copy of `version` (default: latest).

    `publish`: before the swap, store the verified copy again as the newest version (reason
    `restore`, `restoredFrom` naming the version), so the restored state is what a later
    activation or a restore without a version picks -- not the state it replaced. If that
    upload fails, nothing is swapped. `new_position`: the position the restored state takes
    (a restore is a new state: it must rank above the one it replaces; engine/location.py).

    Returns {"version", "manifest", "aside", "published"}. Raises `SnapshotNotFound`,
    `SnapshotCorrupt` or `SnapshotStoreUnavailable`; in every failure the live file is
    untouched.
    """
    db_path = Path(db_path)
    existing = list_versions(store, workspace_id)
    version = _chosen_version(store, workspace_id, version, existing)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    published = None
    with tempfile.TemporaryDirectory(prefix=".restore-", dir=db_path.parent) as folder:
        verified, manifest = fetch_verified(store, workspace_id, version, Path(folder))
        if new_position is not None:
            rebase(verified, new_position, epoch_ms())
        carry_answers(db_path, verified)  # before it is published: a wake may start from it
        if publish:
            published = _publish_restored(
                verified, store, workspace_id, existing, version, manifest, new_position
            )
        aside = swap_in(verified, db_path)
    if published is not None and keep > 0:
        prune(store, workspace_id, keep, [*existing, published["version"]])
    took = round((time.perf_counter() - started) * 1e3, 3)
    log.info(
        "restored %s to %s (%d entries) in %.1f ms; previous file kept at %s",
        workspace_id,
        version,
        manifest.get("entryCount", -1),
        took,
        aside,
    )
    return {
        "version": version,
        "manifest": manifest,
        "aside": aside,
        "tookMs": took,
        "published": published,
    }


def restore_latest_good(
    store: SnapshotStore, workspace_id: str, db_path: str | Path
) -> SnapshotRestore:
    """Restore the newest version that verifies, skipping (and reporting) corrupt ones.

    Used when a workspace's file is missing (a new node): an older good version beats none.
    """
    versions = list_versions(store, workspace_id)
    if not versions:
        raise SnapshotNotFound(f"workspace {workspace_id} has no snapshot in {store.description}")
    skipped: list[SkippedVersion] = []
    for version in reversed(versions):
        try:
            result = restore_snapshot(store, workspace_id, db_path, version)
        except SnapshotCorrupt as exc:
            log.error("skipping corrupt snapshot: %s", exc.message)
            skipped.append({"version": version, "error": exc.message})
            continue
        result["skipped"] = skipped
        return result
    raise SnapshotCorrupt(
        f"every snapshot of workspace {workspace_id} is corrupt ({len(skipped)} tried)"
    )


__all__ = [
    "ASIDE_MARK",
    "fetch_verified",
    "restore_latest_good",
    "restore_snapshot",
    "swap_in",
    "verify_database",
]
