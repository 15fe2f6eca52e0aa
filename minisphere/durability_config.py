"""Durability settings of the service (snapshot store, snapshot triggers, hibernation),
read from the environment into a typed, immutable, picklable object.

| variable                         | default          | meaning                                     |
|----------------------------------|------------------|---------------------------------------------|
| MINISPHERE_SNAPSHOT_STORE        | local            | `local` (a directory) or `s3`               |
| MINISPHERE_SNAPSHOT_DIR          | <data>/snapshots | the local store's directory                 |
| MINISPHERE_S3_BUCKET             | (none)           | bucket of the S3 store (required for s3)    |
| MINISPHERE_S3_PREFIX             | minisphere/      | key prefix inside the bucket                |
| MINISPHERE_S3_ENDPOINT_URL       | (AWS)            | an S3-compatible endpoint (MinIO, moto...)  |
| MINISPHERE_S3_REGION             | (boto3 default)  | region name                                 |
| MINISPHERE_S3_ACCESS_KEY_ID      | (boto3 chain)    | credentials; empty = boto3's usual chain    |
| MINISPHERE_S3_SECRET_ACCESS_KEY  | (boto3 chain)    |                                             |
| MINISPHERE_SNAPSHOT_EVERY_WRITES | 1000             | snapshot after this many writes (0 = off)   |
| MINISPHERE_SNAPSHOT_EVERY_S      | 300              | or this many seconds, if changed (0 = off)  |
| MINISPHERE_SNAPSHOT_KEEP         | 20               | versions kept per workspace                 |
| MINISPHERE_HIBERNATE_IDLE_S      | 600              | idle seconds before hibernation (0 = never) |
| MINISPHERE_MAX_RESIDENT          | 256              | resident workspace actors (LRU above it)    |
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping

from .env_values import env_number
from .snapshot_constants import (HIBERNATE_IDLE_S, MAX_RESIDENT_WORKSPACES, SNAPSHOT_EVERY_S,
                                 SNAPSHOT_EVERY_WRITES, SNAPSHOT_KEEP_VERSIONS)
from .snapshot_store import SnapshotStore, store_from_settings

DEFAULT_S3_PREFIX = "minisphere/"
SNAPSHOT_DIR_NAME = "snapshots"


class DurabilityConfigError(RuntimeError):
    """Durability settings that cannot be used; the service must not start."""


@dataclass(frozen=True)
class DurabilityConfig:
    store: str = "local"
    snapshot_dir: str = ""
    s3_bucket: str = ""
    s3_prefix: str = DEFAULT_S3_PREFIX
    s3_endpoint_url: str = ""
    s3_region: str = ""
    s3_access_key_id: str = ""
    s3_secret_access_key: str = ""
    snapshot_every_writes: int = SNAPSHOT_EVERY_WRITES
    snapshot_every_s: float = SNAPSHOT_EVERY_S
    snapshot_keep: int = SNAPSHOT_KEEP_VERSIONS
    hibernate_idle_s: float = HIBERNATE_IDLE_S
    max_resident: int = MAX_RESIDENT_WORKSPACES

    def store_settings(self) -> dict:
        if self.store == "s3":
            return {"kind": "s3", "bucket": self.s3_bucket, "prefix": self.s3_prefix,
                    "endpoint_url": self.s3_endpoint_url, "region": self.s3_region,
                    "access_key_id": self.s3_access_key_id,
                    "secret_access_key": self.s3_secret_access_key}
        return {"kind": "local", "root": self.snapshot_dir}

    def make_store(self) -> SnapshotStore:
        return store_from_settings(self.store_settings())

    def describe(self) -> str:
        if self.store == "s3":
            where = f"s3://{self.s3_bucket}/{self.s3_prefix}"
            return where + (f" at {self.s3_endpoint_url}" if self.s3_endpoint_url else "")
        return self.snapshot_dir

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping | None) -> "DurabilityConfig":
        return cls(**dict(data or {}))


def _number(env: Mapping[str, str], name: str, default, low, high, kind=int):
    return env_number(env, name, default, low, high, kind=kind, error=DurabilityConfigError)


def load_durability_config(data_dir: str | Path, env: Mapping[str, str] | None = None
                           ) -> DurabilityConfig:
    env = os.environ if env is None else env
    store = (env.get("MINISPHERE_SNAPSHOT_STORE") or "local").strip().lower()
    if store not in ("local", "s3"):
        raise DurabilityConfigError(f"MINISPHERE_SNAPSHOT_STORE must be local or s3, got {store!r}")
    bucket = (env.get("MINISPHERE_S3_BUCKET") or "").strip()
    if store == "s3" and not bucket:
        raise DurabilityConfigError("MINISPHERE_SNAPSHOT_STORE=s3 needs MINISPHERE_S3_BUCKET")
    prefix = (env.get("MINISPHERE_S3_PREFIX") if "MINISPHERE_S3_PREFIX" in env
              else DEFAULT_S3_PREFIX).strip().strip("/")
    snapshot_dir = env.get("MINISPHERE_SNAPSHOT_DIR") or str(Path(data_dir) / SNAPSHOT_DIR_NAME)
    return DurabilityConfig(
        store=store, snapshot_dir=str(Path(snapshot_dir).expanduser().resolve()),
        s3_bucket=bucket, s3_prefix=prefix + "/" if prefix else "",
        s3_endpoint_url=(env.get("MINISPHERE_S3_ENDPOINT_URL") or "").strip(),
        s3_region=(env.get("MINISPHERE_S3_REGION") or "").strip(),
        s3_access_key_id=(env.get("MINISPHERE_S3_ACCESS_KEY_ID") or "").strip(),
        s3_secret_access_key=(env.get("MINISPHERE_S3_SECRET_ACCESS_KEY") or "").strip(),
        snapshot_every_writes=_number(env, "MINISPHERE_SNAPSHOT_EVERY_WRITES",
                                      SNAPSHOT_EVERY_WRITES, 0, 10**9),
        snapshot_every_s=_number(env, "MINISPHERE_SNAPSHOT_EVERY_S", SNAPSHOT_EVERY_S, 0,
                                 86_400 * 30, float),
        snapshot_keep=_number(env, "MINISPHERE_SNAPSHOT_KEEP", SNAPSHOT_KEEP_VERSIONS, 1, 10_000),
        hibernate_idle_s=_number(env, "MINISPHERE_HIBERNATE_IDLE_S", HIBERNATE_IDLE_S, 0,
                                 86_400 * 365, float),
        max_resident=_number(env, "MINISPHERE_MAX_RESIDENT", MAX_RESIDENT_WORKSPACES, 1, 1_000_000))
