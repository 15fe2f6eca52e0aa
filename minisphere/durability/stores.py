"""Where snapshots live: a `SnapshotStore` is a flat map of keys to immutable blobs.

Keys are relative, `/`-separated, made of safe segments (`<workspace>/<version>.db.gz`), so no
key can climb out of the store's root or prefix. Two stores:

- `LocalDirSnapshotStore(root)`: files under a directory (the embedded default,
  `<data>/snapshots`). Writes go to a temporary file, are fsynced, then renamed into place.
  Its files are 0600 and its folders 0700 whatever the process umask is: a snapshot holds a
  workspace's whole content.
- `S3SnapshotStore(bucket, prefix, endpoint_url, ...)`: boto3 with short connect timeouts and a
  bounded number of attempts. Any failure to reach the store is `SnapshotStoreUnavailable`.
"""

from __future__ import annotations

import abc
import re
import shutil
import tempfile
from pathlib import Path

from minisphere.durability.constants import (
    S3_CONNECT_TIMEOUT_S,
    S3_MAX_ATTEMPTS,
    S3_READ_TIMEOUT_S,
    SNAPSHOT_COPY_CHUNK_BYTES,
)
from minisphere.durability.s3 import make_s3_client
from minisphere.errors import (
    SnapshotCorrupt,
    SnapshotError,
    SnapshotNotFound,
    SnapshotStoreUnavailable,
)
from minisphere.files import replaced_in_one_step
from minisphere.settings import (
    PRIVATE_FILE_MODE,
    S3Settings,
    SnapshotSettings,
    ensure_private_dir,
)

_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_key(key: str) -> str:
    parts = key.split("/") if isinstance(key, str) else []
    if not parts or any(not _SEGMENT.fullmatch(p) or ".." in p for p in parts):
        raise SnapshotError(f"invalid snapshot key {key!r}")
    return key


def check_prefix(prefix: str) -> str:
    """A key prefix: empty or safe segments ending in '/'."""
    if prefix == "":
        return prefix
    if not prefix.endswith("/"):
        raise SnapshotError(f"snapshot prefix must end with '/': {prefix!r}")
    check_key(prefix[:-1])
    return prefix


class SnapshotStore(abc.ABC):
    """Immutable blobs under keys. Implementations raise only the named snapshot errors."""

    description: str = "snapshot store"

    @abc.abstractmethod
    def put_file(self, key: str, source: Path) -> None:
        """Store the file's bytes under `key` (replacing nothing in normal use)."""

    @abc.abstractmethod
    def get_file(self, key: str, target: Path) -> None:
        """Write the blob under `key` to `target`; `SnapshotNotFound` when absent."""

    @abc.abstractmethod
    def list_keys(self, prefix: str) -> list[str]:
        """Every key starting with `prefix` (a folder-like prefix ending in '/'), sorted."""

    @abc.abstractmethod
    def delete(self, key: str) -> None:
        """Remove `key` (absent is fine)."""

    def stored_key(self, key: str) -> str:
        """Where `key` is kept in the store itself (a view may place it elsewhere)."""
        return key

    def put_bytes(self, key: str, data: bytes) -> None:
        with tempfile.TemporaryDirectory(prefix="ms-put-") as folder:
            path = Path(folder) / "blob"
            path.write_bytes(data)
            self.put_file(key, path)

    def get_bytes(self, key: str, max_bytes: int | None = None) -> bytes:
        with tempfile.TemporaryDirectory(prefix="ms-get-") as folder:
            path = Path(folder) / "blob"
            self.get_file(key, path)
            if max_bytes is not None and path.stat().st_size > max_bytes:
                # only a tampered or broken object outgrows what its reader allows
                raise SnapshotCorrupt(f"{key} is larger than {max_bytes} bytes")
            return path.read_bytes()


class LocalDirSnapshotStore(SnapshotStore):
    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()
        self.description = f"local directory {self.root}"

    def _path(self, key: str) -> Path:
        path = (self.root / check_key(key)).resolve()
        if self.root not in path.parents:
            raise SnapshotError(f"invalid snapshot key {key!r}")
        return path

    def put_file(self, key: str, source: Path) -> None:
        target = self._path(key)
        try:
            ensure_private_dir(target.parent)
            with source.open("rb") as src, replaced_in_one_step(target, PRIVATE_FILE_MODE) as dst:
                shutil.copyfileobj(src, dst, SNAPSHOT_COPY_CHUNK_BYTES)
        except OSError as exc:
            raise SnapshotStoreUnavailable(
                f"cannot write {key} to {self.description}: {exc}"
            ) from None

    def get_file(self, key: str, target: Path) -> None:
        source = self._path(key)
        try:
            with source.open("rb") as src, target.open("wb") as dst:
                shutil.copyfileobj(src, dst, SNAPSHOT_COPY_CHUNK_BYTES)
        except FileNotFoundError:
            raise SnapshotNotFound(f"no snapshot object {key} in {self.description}") from None
        except OSError as exc:
            raise SnapshotStoreUnavailable(
                f"cannot read {key} from {self.description}: {exc}"
            ) from None

    def list_keys(self, prefix: str) -> list[str]:
        check_prefix(prefix)
        folder = self.root / prefix if prefix else self.root
        if not folder.is_dir():
            return []
        keys = []
        for path in folder.rglob("*"):
            if path.is_file() and not path.name.startswith("."):
                keys.append(path.relative_to(self.root).as_posix())
        return sorted(keys)

    def delete(self, key: str) -> None:
        try:
            self._path(key).unlink(missing_ok=True)
        except OSError as exc:
            raise SnapshotStoreUnavailable(f"cannot delete {key}: {exc}") from None


class S3SnapshotStore(SnapshotStore):
    """Snapshots in an S3 bucket (or any S3-compatible server) under `prefix`."""

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        connect_timeout_s: float = S3_CONNECT_TIMEOUT_S,
        read_timeout_s: float = S3_READ_TIMEOUT_S,
        max_attempts: int = S3_MAX_ATTEMPTS,
    ):
        if not bucket:
            raise SnapshotError("an S3 snapshot store needs a bucket name")
        self.bucket = bucket
        self.prefix = check_prefix(prefix.strip("/") + "/" if prefix.strip("/") else "")
        self.endpoint_url = endpoint_url or None
        self.description = f"s3://{bucket}/{self.prefix}" + (
            f" at {self.endpoint_url}" if self.endpoint_url else ""
        )
        self.client = make_s3_client(
            S3Settings(
                bucket=bucket,
                prefix=self.prefix,
                endpoint_url=endpoint_url or "",
                region=region or "",
                access_key_id=access_key_id or "",
                secret_access_key=secret_access_key or "",
            ),
            connect_timeout_s=connect_timeout_s,
            read_timeout_s=read_timeout_s,
            max_attempts=max_attempts,
        )

    def _unavailable(self, what: str, exc: Exception) -> SnapshotError | SnapshotNotFound:
        # no types shipped (botocore-stubs is not a dependency): its exceptions are Any here
        from botocore.exceptions import ClientError

        if isinstance(exc, ClientError):
            code = exc.response.get("Error", {}).get("Code", "")
            if code in ("NoSuchKey", "404", "NotFound"):
                return SnapshotNotFound(f"no snapshot object {what} in {self.description}")
            return SnapshotStoreUnavailable(
                f"{self.description} refused {what}: {code or 'error'} "
                f"({exc.response.get('Error', {}).get('Message', '')})".rstrip(" ()")
            )
        return SnapshotStoreUnavailable(
            f"cannot reach {self.description} for {what}: {exc.__class__.__name__}: {exc}"
        )

    def _full(self, key: str) -> str:
        return self.prefix + check_key(key)

    def put_file(self, key: str, source: Path) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            with source.open("rb") as body:
                self.client.put_object(
                    Bucket=self.bucket,
                    Key=self._full(key),
                    Body=body,
                    ContentLength=source.stat().st_size,
                )
        except (BotoCoreError, ClientError) as exc:
            raise self._unavailable(key, exc) from None

    def get_file(self, key: str, target: Path) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self._full(key))
            with target.open("wb") as dst:
                for chunk in response["Body"].iter_chunks(SNAPSHOT_COPY_CHUNK_BYTES):
                    dst.write(chunk)
        except (BotoCoreError, ClientError) as exc:
            raise self._unavailable(key, exc) from None

    def list_keys(self, prefix: str) -> list[str]:
        from botocore.exceptions import BotoCoreError, ClientError

        check_prefix(prefix)
        keys: list[str] = []
        try:
            paginator = self.client.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix + prefix):
                keys.extend(item["Key"][len(self.prefix) :] for item in page.get("Contents", []))
        except (BotoCoreError, ClientError) as exc:
            raise self._unavailable(f"listing {prefix or '/'}", exc) from None
        return sorted(keys)

    def delete(self, key: str) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.delete_object(Bucket=self.bucket, Key=self._full(key))
        except (BotoCoreError, ClientError) as exc:
            raise self._unavailable(key, exc) from None


def open_snapshot_store(settings: SnapshotSettings) -> SnapshotStore:
    """The store the settings name: a local directory or an S3 bucket/prefix."""
    if settings.store == "local":
        return LocalDirSnapshotStore(settings.local_dir)
    if settings.store == "s3":
        s3 = settings.s3
        return S3SnapshotStore(
            s3.bucket,
            s3.prefix,
            endpoint_url=s3.endpoint_url,
            region=s3.region,
            access_key_id=s3.access_key_id,
            secret_access_key=s3.secret_access_key,
        )
    raise SnapshotError(f"unknown snapshot store kind {settings.store!r} (local or s3)")
