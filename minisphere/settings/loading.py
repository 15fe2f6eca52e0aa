"""Reading the settings from the environment: `load_settings(env)` is the only reader of
`MINISPHERE_*` service variables, and `ConfigError` names the first unusable one."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from minisphere.engine.constants import DEFAULT_SYNCHRONOUS
from minisphere.engine.db import SYNCHRONOUS_MODES
from minisphere.errors import ConfigError
from minisphere.settings.admin_token import check_admin_token, stored_admin_token
from minisphere.settings.defaults import (
    AUTO,
    DEFAULT_BLUEPRINT_PATH,
    DEFAULT_DATA_DIR,
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
    HTTP_FRONTS,
    LITESTREAM_DIR_NAME,
    MCP_LOOPBACK_HOSTS,
    RECYCLE_MAX_BINDS,
    RECYCLE_MAX_GROWTH_MIB,
    REPLICATION_MODES,
    REPLICATION_SYNC_TIMEOUT_S,
    SNAPSHOT_DIR_NAME,
    SNAPSHOT_EVERY_S,
    SNAPSHOT_EVERY_WRITES,
    SNAPSHOT_KEEP_VERSIONS,
    SNAPSHOT_STORE_KINDS,
    SPARE_IDLE_CPU_SHARE,
    SPARE_MEMORY_SHARE,
    WAKE_DEADLINE_S,
    WAKE_SHED_LATENCY_MS,
    WORKSPACE_SLOT_MODES,
)
from minisphere.settings.file_modes import ensure_private_dir
from minisphere.settings.model import (
    McpSettings,
    ReplicationSettings,
    ResidencySettings,
    S3Settings,
    Settings,
    SnapshotSettings,
    any_port,
    origins_of,
)
from minisphere.settings.table import env_value

_WILDCARD_HOSTS = ("0.0.0.0", "::", "")


Number = TypeVar("Number", int, float)
Default = TypeVar("Default", int, float, None)  # None: unset means "decided elsewhere"


def env_number(
    env: Mapping[str, str],
    name: str,
    default: Default,
    low: float,
    high: float,
    *,
    kind: Callable[[str], Number] = int,
) -> Number | Default:
    """A documented variable as a number in [low, high]; `default` when unset or blank."""
    raw = env_value(name, env)
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        whole = " (an integer)" if kind is int else ""
        raise ConfigError(f"{name} must be a number{whole}, got {raw!r}") from None
    if not low <= value <= high:
        raise ConfigError(f"{name} must be between {low} and {high}, got {value}")
    return value


def load_s3_settings(env: Mapping[str, str] | None = None) -> S3Settings:
    env = os.environ if env is None else env
    prefix = env.get("MINISPHERE_S3_PREFIX", DEFAULT_S3_PREFIX).strip().strip("/")
    return S3Settings(
        bucket=env_value("MINISPHERE_S3_BUCKET", env),
        prefix=prefix + "/" if prefix else "",
        endpoint_url=env_value("MINISPHERE_S3_ENDPOINT_URL", env),
        region=env_value("MINISPHERE_S3_REGION", env),
        access_key_id=env_value("MINISPHERE_S3_ACCESS_KEY_ID", env),
        secret_access_key=env_value("MINISPHERE_S3_SECRET_ACCESS_KEY", env),
    )


def load_snapshot_settings(data_dir: str | Path, env: Mapping[str, str]) -> SnapshotSettings:
    store = env_value("MINISPHERE_SNAPSHOT_STORE", env).lower() or "local"
    if store not in SNAPSHOT_STORE_KINDS:
        raise ConfigError(f"MINISPHERE_SNAPSHOT_STORE must be local or s3, got {store!r}")
    s3 = load_s3_settings(env)
    if store == "s3" and not s3.bucket:
        raise ConfigError("MINISPHERE_SNAPSHOT_STORE=s3 needs MINISPHERE_S3_BUCKET")
    local_dir = env_value("MINISPHERE_SNAPSHOT_DIR", env) or str(Path(data_dir) / SNAPSHOT_DIR_NAME)
    return SnapshotSettings(
        store=store,
        local_dir=str(Path(local_dir).expanduser().resolve()),
        s3=s3,
        every_writes=env_number(
            env, "MINISPHERE_SNAPSHOT_EVERY_WRITES", SNAPSHOT_EVERY_WRITES, 0, 10**9
        ),
        every_s=env_number(
            env, "MINISPHERE_SNAPSHOT_EVERY_S", SNAPSHOT_EVERY_S, 0, 86_400 * 30, kind=float
        ),
        keep=env_number(env, "MINISPHERE_SNAPSHOT_KEEP", SNAPSHOT_KEEP_VERSIONS, 1, 10_000),
    )


def load_replication_settings(data_dir: Path, env: Mapping[str, str]) -> ReplicationSettings:
    mode = env_value("MINISPHERE_REPLICATION", env).lower() or DEFAULT_REPLICATION_MODE
    if mode not in REPLICATION_MODES:
        raise ConfigError(f"MINISPHERE_REPLICATION must be sync, async or off, got {mode!r}")
    return ReplicationSettings(
        mode=mode,
        daemon_dir=str(data_dir / LITESTREAM_DIR_NAME),
        sync_timeout_s=env_number(
            env, "MINISPHERE_REPLICATION_TIMEOUT_S", REPLICATION_SYNC_TIMEOUT_S, 1, 300, kind=float
        ),
    )


def load_workspace_slots_mode(env: Mapping[str, str]) -> str:
    mode = env_value("MINISPHERE_WORKSPACE_SLOTS", env).lower() or DEFAULT_WORKSPACE_SLOTS_MODE
    if mode not in WORKSPACE_SLOT_MODES:
        raise ConfigError(f"MINISPHERE_WORKSPACE_SLOTS must be auto, on or off, got {mode!r}")
    return mode


def load_replica_bounds(env: Mapping[str, str] | None = None) -> tuple[int, int]:
    """(min, max) ingress replicas from MINISPHERE_MIN_REPLICAS / MINISPHERE_MAX_REPLICAS (the
    max defaults to at least the min). The launcher reads them through `load_settings`;
    `serve run serve_app:app` reads only these, when the app is imported."""
    env = os.environ if env is None else env
    min_replicas = env_number(env, "MINISPHERE_MIN_REPLICAS", DEFAULT_MIN_REPLICAS, 1, 64)
    max_replicas = env_number(
        env, "MINISPHERE_MAX_REPLICAS", max(DEFAULT_MAX_REPLICAS, min_replicas), min_replicas, 64
    )
    return min_replicas, max_replicas


def load_trusted_proxies(env: Mapping[str, str]) -> tuple[str, ...]:
    """MINISPHERE_TRUSTED_PROXIES as normalized networks; `ConfigError` naming a bad one."""
    networks = []
    for item in filter(
        None, (p.strip() for p in env_value("MINISPHERE_TRUSTED_PROXIES", env).split(","))
    ):
        try:
            networks.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise ConfigError(
                f"MINISPHERE_TRUSTED_PROXIES: {item!r} is not an address or network"
            ) from None
    return tuple(networks)


def _listed(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in env_value(name, env).split(",") if part.strip())


def load_mcp_settings(host: str, env: Mapping[str, str]) -> McpSettings:
    """Loopback names and the service's own host, any port, plus the listed ones."""
    names = MCP_LOOPBACK_HOSTS + (
        ()
        if host in _WILDCARD_HOSTS + MCP_LOOPBACK_HOSTS
        else (f"[{host}]" if ":" in host else host,)
    )
    return McpSettings(
        allowed_hosts=any_port(names) + _listed(env, "MINISPHERE_MCP_ALLOWED_HOSTS"),
        allowed_origins=origins_of(names) + _listed(env, "MINISPHERE_MCP_ALLOWED_ORIGINS"),
    )


def load_residency_settings(env: Mapping[str, str]) -> ResidencySettings:
    """When workspaces hibernate, how many stay resident, the spare pool and wake shedding."""
    return ResidencySettings(
        hibernate_idle_s=env_number(
            env, "MINISPHERE_HIBERNATE_IDLE_S", HIBERNATE_IDLE_S, 0, 86_400 * 365, kind=float
        ),
        max_resident=env_number(env, "MINISPHERE_MAX_RESIDENT", AUTO, 1, 1_000_000),
        spare_actors=env_number(env, "MINISPHERE_SPARE_ACTORS", None, 0, 1_000),
        spare_memory_share=env_number(
            env, "MINISPHERE_SPARE_MEMORY_SHARE", SPARE_MEMORY_SHARE, 0.0, 1.0, kind=float
        ),
        spare_idle_cpu_share=env_number(
            env, "MINISPHERE_SPARE_IDLE_CPU_SHARE", SPARE_IDLE_CPU_SHARE, 0.0, 1.0, kind=float
        ),
        recycle_max_binds=env_number(
            env, "MINISPHERE_RECYCLE_MAX_BINDS", RECYCLE_MAX_BINDS, 0, 1_000_000
        ),
        recycle_max_growth_mib=env_number(
            env,
            "MINISPHERE_RECYCLE_MAX_GROWTH_MIB",
            RECYCLE_MAX_GROWTH_MIB,
            1.0,
            1_000_000.0,
            kind=float,
        ),
        wake_deadline_s=env_number(
            env, "MINISPHERE_WAKE_DEADLINE_S", WAKE_DEADLINE_S, 0.0, 3600.0, kind=float
        ),
        wake_shed_latency_ms=env_number(
            env,
            "MINISPHERE_WAKE_SHED_LATENCY_MS",
            WAKE_SHED_LATENCY_MS,
            0.0,
            3_600_000.0,
            kind=float,
        ),
        workspace_slots=load_workspace_slots_mode(env),
        node_workspace_slots=env_number(env, "MINISPHERE_NODE_WORKSPACE_SLOTS", AUTO, 1, 1_000_000),
    )


def load_http_front(env: Mapping[str, str]) -> str:
    front = (env_value("MINISPHERE_HTTP_FRONT", env) or DEFAULT_HTTP_FRONT).lower()
    if front not in HTTP_FRONTS:
        raise ConfigError(f"MINISPHERE_HTTP_FRONT must be haproxy or python, got {front!r}")
    return front


def load_synchronous(env: Mapping[str, str]) -> str:
    synchronous = (env_value("MINISPHERE_SYNCHRONOUS", env) or DEFAULT_SYNCHRONOUS).upper()
    if synchronous not in SYNCHRONOUS_MODES:
        raise ConfigError(
            f"MINISPHERE_SYNCHRONOUS must be OFF, NORMAL, FULL or EXTRA, got {synchronous!r}"
        )
    return synchronous


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Every setting from `env` (default: the process environment); `ConfigError` when one is
    unusable, before anything is created on disk."""
    env = os.environ if env is None else env
    data_dir = (
        Path(env_value("MINISPHERE_DATA_DIR", env) or DEFAULT_DATA_DIR).expanduser().resolve()
    )
    host = env_value("MINISPHERE_HOST", env) or DEFAULT_HOST
    synchronous, http_front = load_synchronous(env), load_http_front(env)
    token, source = env_value("MINISPHERE_ADMIN_TOKEN", env), "env"
    check_admin_token(token, host)
    port = env_number(env, "MINISPHERE_PORT", DEFAULT_PORT, 1, 65535)
    max_batch = env_number(env, "MINISPHERE_MAX_BATCH", DEFAULT_MAX_BATCH_WRITES, 1, 10_000)
    min_replicas, max_replicas = load_replica_bounds(env)
    snapshots = load_snapshot_settings(data_dir, env)
    replication = load_replication_settings(data_dir, env)
    residency = load_residency_settings(env)
    trusted_proxies, mcp = load_trusted_proxies(env), load_mcp_settings(host, env)
    ensure_private_dir(data_dir)  # only once everything else is valid
    if not token:
        token, source = stored_admin_token(data_dir)
    return Settings(
        data_dir=str(data_dir),
        host=host,
        port=port,
        http_front=http_front,
        admin_token=token,
        admin_token_source=source,
        namespace=env_value("MINISPHERE_RAY_NAMESPACE", env) or DEFAULT_RAY_NAMESPACE,
        ray_address=env_value("MINISPHERE_RAY_ADDRESS", env),
        synchronous=synchronous,
        max_batch=max_batch,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        blueprint_path=env_value("MINISPHERE_BLUEPRINT", env) or str(DEFAULT_BLUEPRINT_PATH),
        access_log=env_value("MINISPHERE_ACCESS_LOG", env).lower() in ("1", "true", "yes"),
        trusted_proxies=trusted_proxies,
        snapshots=snapshots,
        residency=residency,
        replication=replication,
        mcp=mcp,
    )
