"""The one typed, immutable settings object (`Settings`) and its parts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from minisphere.engine.constants import DEFAULT_SYNCHRONOUS
from minisphere.settings.defaults import (
    AUTO,
    DEFAULT_BLUEPRINT_PATH,
    DEFAULT_HOST,
    DEFAULT_HTTP_FRONT,
    DEFAULT_MAX_BATCH_WRITES,
    DEFAULT_MAX_REPLICAS,
    DEFAULT_MIN_REPLICAS,
    DEFAULT_PORT,
    DEFAULT_RAY_NAMESPACE,
    DEFAULT_REPLICATION_MODE,
    DEFAULT_S3_PREFIX,
    DEFAULT_WORKSPACE_SLOTS_MODE,
    HIBERNATE_IDLE_S,
    MCP_LOOPBACK_HOSTS,
    RECYCLE_MAX_BINDS,
    RECYCLE_MAX_GROWTH_MIB,
    REPLICATION_SYNC_TIMEOUT_S,
    SNAPSHOT_EVERY_S,
    SNAPSHOT_EVERY_WRITES,
    SNAPSHOT_KEEP_VERSIONS,
    SPARE_IDLE_CPU_SHARE,
    SPARE_MEMORY_SHARE,
    TOKEN_CACHE_TTL_S,
    WAKE_DEADLINE_S,
    WAKE_SHED_LATENCY_MS,
)


@dataclass(frozen=True)
class S3Settings:
    """One bucket/prefix on an S3-compatible server: the snapshot store and contract evidence."""

    bucket: str = ""
    prefix: str = DEFAULT_S3_PREFIX
    endpoint_url: str = ""
    region: str = ""
    access_key_id: str = ""
    secret_access_key: str = ""

    def describe(self) -> str:
        where = f"s3://{self.bucket}/{self.prefix}"
        return where + (f" at {self.endpoint_url}" if self.endpoint_url else "")


@dataclass(frozen=True)
class SnapshotSettings:
    store: str = "local"  # local | s3
    local_dir: str = ""
    s3: S3Settings = field(default_factory=S3Settings)
    every_writes: int = SNAPSHOT_EVERY_WRITES
    every_s: float = SNAPSHOT_EVERY_S
    keep: int = SNAPSHOT_KEEP_VERSIONS

    def describe(self) -> str:
        return self.s3.describe() if self.store == "s3" else self.local_dir


@dataclass(frozen=True)
class ReplicationSettings:
    mode: str = DEFAULT_REPLICATION_MODE  # sync | async | off
    sync_timeout_s: float = REPLICATION_SYNC_TIMEOUT_S
    daemon_dir: str = ""  # the node's Litestream folder (<data>/litestream)

    @property
    def enabled(self) -> bool:
        return self.mode != "off"


@dataclass(frozen=True)
class ResidencySettings:
    hibernate_idle_s: float = HIBERNATE_IDLE_S
    max_resident: int = AUTO  # AUTO: control/residency_policy.derived_resident_cap
    spare_actors: int | None = None  # None: the pool follows demand (residency_policy)
    spare_memory_share: float = SPARE_MEMORY_SHARE  # the demand-following pool's budget
    spare_idle_cpu_share: float = SPARE_IDLE_CPU_SHARE
    recycle_max_binds: int = RECYCLE_MAX_BINDS  # 0: a hibernated process is killed
    recycle_max_growth_mib: float = RECYCLE_MAX_GROWTH_MIB
    wake_deadline_s: float = WAKE_DEADLINE_S  # 0: wakes are never refused
    wake_shed_latency_ms: float = WAKE_SHED_LATENCY_MS  # 0: never refused for late calls
    workspace_slots: str = DEFAULT_WORKSPACE_SLOTS_MODE  # auto | on | off
    node_workspace_slots: int = AUTO  # AUTO: actors/directory/placement.node_workspace_slots


def any_port(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(value for name in names for value in (name, f"{name}:*"))


def origins_of(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{scheme}://{value}" for scheme in ("http", "https") for value in any_port(names))


@dataclass(frozen=True)
class McpSettings:
    """The Host and Origin headers the MCP endpoint accepts (its DNS-rebinding protection: a
    web page must not reach a service on this machine through a name that resolves here)."""

    allowed_hosts: tuple[str, ...] = any_port(MCP_LOOPBACK_HOSTS)
    allowed_origins: tuple[str, ...] = origins_of(MCP_LOOPBACK_HOSTS)


@dataclass(frozen=True)
class Settings:
    data_dir: str
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    http_front: str = DEFAULT_HTTP_FRONT  # haproxy | python (HTTP_FRONTS)
    admin_token: str = ""
    admin_token_source: str = "env"  # env | file | generated
    namespace: str = DEFAULT_RAY_NAMESPACE
    ray_address: str = ""
    synchronous: str = DEFAULT_SYNCHRONOUS
    max_batch: int = DEFAULT_MAX_BATCH_WRITES
    min_replicas: int = DEFAULT_MIN_REPLICAS
    max_replicas: int = DEFAULT_MAX_REPLICAS
    blueprint_path: str = str(DEFAULT_BLUEPRINT_PATH)
    token_cache_ttl_s: float = TOKEN_CACHE_TTL_S
    access_log: bool = False
    # networks whose X-Forwarded-For is believed (the failed-auth budget is per client)
    trusted_proxies: tuple[str, ...] = ()
    snapshots: SnapshotSettings = field(default_factory=SnapshotSettings)
    residency: ResidencySettings = field(default_factory=ResidencySettings)
    replication: ReplicationSettings = field(default_factory=ReplicationSettings)
    mcp: McpSettings = field(default_factory=McpSettings)

    @property
    def workspaces_dir(self) -> Path:
        return Path(self.data_dir) / "workspaces"

    @property
    def control_db(self) -> Path:
        return Path(self.data_dir) / "control.db"
