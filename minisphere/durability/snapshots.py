"""Consistent, compressed, checksummed, versioned snapshots of one workspace file.

A snapshot is taken with `VACUUM INTO` from a separate read-only connection (one consistent
read transaction; WAL lets writers go on meanwhile). Unlike a page-by-page copy it rebuilds
the file, so the copy carries no free pages: text that `forget` removed is not in a snapshot
taken after the forget (the write connection's secure_delete also zeroes the live file's freed
pages). The copy is a single self-contained file (journal_mode=DELETE), gzip-compressed and
uploaded as

    <workspace>/<version>.db.gz      the compressed file
    <workspace>/<version>.json       its manifest, written last (a version exists once it does)

where `version` is `<UTC yyyymmddThhmmssmmmZ>-<seq:06d>` and `seq` grows by one per snapshot of
the workspace. The manifest holds sizes and SHA-256 of both the compressed and the raw bytes,
the schema version and the entry count.

Restoring a version is `durability/restores.py`.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import gzip
import json
import logging
import re
import shutil
import tempfile
import time
from pathlib import Path

from minisphere.durability.constants import (
    SNAPSHOT_BLOB_SUFFIX,
    SNAPSHOT_COPY_CHUNK_BYTES,
    SNAPSHOT_FORMAT_VERSION,
    SNAPSHOT_GZIP_LEVEL,
    SNAPSHOT_MANIFEST_SUFFIX,
    SNAPSHOT_MAX_MANIFEST_BYTES,
)
from minisphere.durability.stores import SnapshotStore
from minisphere.engine import db
from minisphere.engine.clock import epoch_ms, iso_utc
from minisphere.engine.idempotency import IDEMPOTENCY_KEEP_MS
from minisphere.engine.location import read_location
from minisphere.engine.scrub import mark_built_clean
from minisphere.errors import (
    TENANT,
    SnapshotCorrupt,
    SnapshotError,
    SnapshotNotFound,
    SnapshotStoreUnavailable,
)
from minisphere.files import sized_sha256
from minisphere.settings import SNAPSHOT_KEEP_VERSIONS

log = logging.getLogger("minisphere.snapshots")
VERSION_PATTERN = re.compile(r"^(\d{8}T\d{9}Z)-(\d{6,})$")
# What a manifest must hold, and the types its fields must have: a manifest comes back from a
# store that someone else may have written to, so nothing in it is trusted before this check.
MANIFEST_REQUIRED = ("compressedBytes", "compressedSha256", "rawBytes", "rawSha256")
MANIFEST_COUNTS = ("format", "seq", "schemaVersion", "entryCount", "rawBytes",
                   "compressedBytes", "createdAtMs", "position")
MANIFEST_DIGESTS = ("rawSha256", "compressedSha256")
MANIFEST_COMPRESSION = "gzip"
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_SHOWN_VALUE_CHARS = 40                 # of a bad field's value, in the refusal


def version_seq(version: str) -> int:
    match = VERSION_PATTERN.fullmatch(version)
    if not match:
        raise SnapshotNotFound(f"{version!r} is not a snapshot version (expected e.g. "
                               "20260101T120000000Z-000001)")
    return int(match.group(2))


def version_taken_ms(version: str) -> int:
    """When a version was taken (epoch ms), from its name."""
    moment = _dt.datetime.strptime(version[:15], "%Y%m%dT%H%M%S").replace(tzinfo=_dt.UTC)
    return int(moment.timestamp()) * 1000 + int(version[15:18])


def _stamp(now_ms: int) -> str:
    moment = _dt.datetime.fromtimestamp(now_ms / 1000, tz=_dt.UTC)
    return moment.strftime("%Y%m%dT%H%M%S") + f"{now_ms % 1000:03d}Z"


def blob_key(workspace_id: str, version: str) -> str:
    return f"{workspace_id}/{version}{SNAPSHOT_BLOB_SUFFIX}"


def manifest_key(workspace_id: str, version: str) -> str:
    return f"{workspace_id}/{version}{SNAPSHOT_MANIFEST_SUFFIX}"


def own_keys(store: SnapshotStore, workspace_id: str) -> list[str]:
    """The workspace's objects: directly under `<workspace>/`, not in a generation folder
    below it (those belong to other creations of the id; see `durability/generations.py`)."""
    prefix = f"{workspace_id}/"
    return [key for key in store.list_keys(prefix) if "/" not in key[len(prefix):]]


def list_versions(store: SnapshotStore, workspace_id: str) -> list[str]:
    """Versions with a manifest, oldest first (ordered by sequence number)."""
    found = []
    for key in own_keys(store, workspace_id):
        name = key.rsplit("/", 1)[-1]
        if name.endswith(SNAPSHOT_MANIFEST_SUFFIX):
            version = name[: -len(SNAPSHOT_MANIFEST_SUFFIX)]
            if VERSION_PATTERN.fullmatch(version):
                found.append(version)
    return sorted(found, key=lambda v: (version_seq(v), v))


def _shown(value) -> str:
    return repr(value)[:_SHOWN_VALUE_CHARS]


def check_manifest(manifest, workspace_id: str, version: str) -> dict:
    """The manifest, or ValueError naming the first field that is missing or of the wrong
    type (counts are non-negative integers, digests 64 hex digits)."""
    if not isinstance(manifest, dict) or manifest.get("version") != version:
        raise ValueError("manifest does not describe this version")
    if manifest.get("workspace", workspace_id) != workspace_id:
        raise ValueError("manifest describes another workspace")
    for field in MANIFEST_REQUIRED:
        if field not in manifest:
            raise ValueError(f"manifest lacks {field}")
    for field in MANIFEST_COUNTS:
        value = manifest.get(field, 0)
        if type(value) is not int or value < 0:         # bool is an int subclass: refused
            raise ValueError(f"{field} must be a non-negative integer, got {_shown(value)}")
    for field in MANIFEST_DIGESTS:
        value = manifest[field]
        if not isinstance(value, str) or not _SHA256_HEX.fullmatch(value):
            raise ValueError(f"{field} must be 64 hex digits, got {_shown(value)}")
    return manifest


def read_manifest(store: SnapshotStore, workspace_id: str, version: str) -> dict:
    version_seq(version)
    try:
        raw = store.get_bytes(manifest_key(workspace_id, version), SNAPSHOT_MAX_MANIFEST_BYTES)
    except SnapshotCorrupt as exc:                        # larger than a manifest can be
        raise SnapshotCorrupt(f"snapshot {workspace_id}@{version}: unreadable manifest "
                              f"({exc.message})") from None
    try:
        manifest = check_manifest(json.loads(raw), workspace_id, version)
    except (ValueError, RecursionError) as exc:     # RecursionError: absurdly nested JSON
        why = exc if isinstance(exc, ValueError) else "nested too deeply"
        raise SnapshotCorrupt(f"snapshot {workspace_id}@{version}: unreadable manifest ({why})") \
            from None
    if manifest.get("format", 0) > SNAPSHOT_FORMAT_VERSION:
        newer = (f"snapshot {workspace_id}@{version} has format {manifest['format']}; this "
                 f"build reads up to {SNAPSHOT_FORMAT_VERSION}")
        raise SnapshotError(newer, public_message=newer)       # names nothing of the deployment
    if manifest.get("compression", MANIFEST_COMPRESSION) != MANIFEST_COMPRESSION:
        raise SnapshotCorrupt(f"snapshot {workspace_id}@{version}: unreadable manifest "
                              f"(compression {_shown(manifest['compression'])} is not gzip)")
    return manifest


def list_snapshots(store: SnapshotStore, workspace_id: str) -> list[dict]:
    """Every version's manifest, oldest first. A manifest that cannot be read is listed with
    `error`, in words any caller may read (the listing also reaches workspace tokens); the
    details are logged. An unreachable store fails the whole listing."""
    listed = []
    for version in list_versions(store, workspace_id):
        try:
            listed.append(read_manifest(store, workspace_id, version))
        except SnapshotStoreUnavailable:
            raise
        except (SnapshotError, SnapshotNotFound) as exc:
            if exc.withholds_details:
                log.warning("snapshot %s@%s not listed: %s", workspace_id, version, exc.message)
            listed.append({"version": version, "workspace": workspace_id,
                           "error": exc.message_for(TENANT)})
    return listed


# ---- taking a snapshot ---------------------------------------------------------------------
def _backup(source_path: Path, target: Path) -> tuple[int, int, int]:
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
            schema = dest.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"
                                  ).fetchone()[0]
            _drop_expired_keys(dest)
            with contextlib.suppress(db.OperationalError):   # a file before workspace_meta
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


def _drop_expired_keys(copy) -> None:
    """Expired idempotency answers stay out of the stored copy (zeroed, not just unlinked)."""
    try:
        copy.execute("DELETE FROM idempotency_keys WHERE at < ?",
                     (epoch_ms() - IDEMPOTENCY_KEEP_MS,))
    except db.OperationalError:          # a file from before idempotency keys: nothing to drop
        pass


def _compress(raw: Path, packed: Path) -> None:
    with open(raw, "rb") as src, open(packed, "wb") as out:
        with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=SNAPSHOT_GZIP_LEVEL,
                           mtime=0) as gz:
            shutil.copyfileobj(src, gz, SNAPSHOT_COPY_CHUNK_BYTES)


def take_snapshot(db_path: str | Path, store: SnapshotStore, workspace_id: str, *,
                  reason: str = "manual", keep: int = SNAPSHOT_KEEP_VERSIONS,
                  now_ms: int | None = None) -> dict:
    """Snapshot the live file at `db_path` into `store`; returns the manifest.

    Store failures raise `SnapshotStoreUnavailable`; nothing partial becomes a version (the
    manifest is written after the blob).
    """
    db_path = Path(db_path)
    if not db_path.exists():
        raise SnapshotError(f"workspace {workspace_id} has no file at {db_path} to snapshot")
    started = time.perf_counter()
    existing = list_versions(store, workspace_id)       # reaches the store first: fail fast
    with tempfile.TemporaryDirectory(prefix=".snapshot-", dir=db_path.parent) as folder:
        raw = Path(folder) / "copy.db"
        try:
            schema, entries, position = _backup(db_path, raw)
        except db.DatabaseError as exc:
            raise SnapshotError(f"cannot copy workspace {workspace_id}: {exc}") from None
        manifest = publish_file(raw, store, workspace_id, existing, reason=reason,
                                schema=schema, entries=entries, now_ms=now_ms,
                                position=position)
    manifest["tookMs"] = round((time.perf_counter() - started) * 1e3, 3)
    if keep > 0:
        prune(store, workspace_id, keep, existing + [manifest["version"]])
    return manifest


def publish_file(raw: Path, store: SnapshotStore, workspace_id: str, existing: list[str], *,
                 reason: str, schema: int, entries: int, now_ms: int | None = None,
                 **extra) -> dict:
    """Compress the self-contained database file `raw` and store it as the workspace's next
    version (after `existing`, its current versions); returns the manifest. `extra` fields
    go into the manifest as they are."""
    now_ms = now_ms if now_ms is not None else epoch_ms()
    seq = (version_seq(existing[-1]) + 1) if existing else 1
    version = f"{_stamp(now_ms)}-{seq:06d}"
    packed = raw.with_name(raw.name + ".gz")
    raw_bytes, raw_sha = sized_sha256(raw)
    _compress(raw, packed)
    try:
        packed_bytes, packed_sha = sized_sha256(packed)
        manifest = {
            "format": SNAPSHOT_FORMAT_VERSION, "workspace": workspace_id, "version": version,
            "seq": seq, "createdAt": iso_utc(now_ms, milliseconds=True), "createdAtMs": now_ms,
            "reason": reason, "schemaVersion": schema, "entryCount": entries,
            "compression": "gzip", "rawBytes": raw_bytes, "rawSha256": raw_sha,
            "compressedBytes": packed_bytes, "compressedSha256": packed_sha,
            "blobKey": store.stored_key(blob_key(workspace_id, version)), **extra}
        store.put_file(blob_key(workspace_id, version), packed)
        store.put_bytes(manifest_key(workspace_id, version),
                        json.dumps(manifest, sort_keys=True).encode())
    finally:
        packed.unlink(missing_ok=True)
    log.info("snapshot %s@%s (%s): %d entries, %d -> %d bytes", workspace_id, version, reason,
             entries, raw_bytes, packed_bytes)
    return manifest


def prune(store: SnapshotStore, workspace_id: str, keep: int,
          versions: list[str] | None = None) -> list[str]:
    """Delete all but the newest `keep` versions (manifest first). Failures are only logged."""
    versions = list_versions(store, workspace_id) if versions is None else versions
    doomed = versions[:-keep] if keep > 0 else []
    for version in doomed:
        try:
            delete_version(store, workspace_id, version)
        except SnapshotError as exc:
            log.warning("could not prune snapshot %s@%s: %s", workspace_id, version, exc.message)
    return doomed


def delete_version(store: SnapshotStore, workspace_id: str, version: str) -> None:
    """One version gone, its manifest first (no listed version points at a missing blob)."""
    store.delete(manifest_key(workspace_id, version))
    store.delete(blob_key(workspace_id, version))


def delete_visible_snapshots(store: SnapshotStore, workspace_id: str) -> int:
    """Remove every object of the workspace that this store shows (through a generation view:
    that generation's; the store itself: the older layout's own); returns how many."""
    keys = own_keys(store, workspace_id)
    for key in sorted(keys, key=lambda k: not k.endswith(SNAPSHOT_MANIFEST_SUFFIX)):
        store.delete(key)                 # manifests first: no version points at a lost blob
    return len(keys)


__all__ = ["take_snapshot", "publish_file", "list_snapshots", "list_versions", "read_manifest",
           "prune", "delete_version", "version_taken_ms", "delete_visible_snapshots",
           "SnapshotStoreUnavailable"]
