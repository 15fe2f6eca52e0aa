"""The service's settings: one typed, immutable object, read from the environment once.

`load_settings(env)` is the only reader of `MINISPHERE_*` service variables; the processes of a
deployment (the launcher, every ingress replica, the actors) receive the resulting `Settings`
object itself, never a dict. `ENV_VARS` is the single table of what can be set: the loader
refuses to read a name that is not in it, `minisphere settings` prints it, and a test compares
it with the documentation's table (docs/operate/settings.md), so the three cannot drift apart.

On a loopback host without MINISPHERE_ADMIN_TOKEN, a token is generated once and kept in
`<data>/.admin_token` (mode 0600), so every process of one deployment agrees on it. Off
loopback the variable is mandatory and must be at least MIN_REMOTE_ADMIN_TOKEN_CHARS long: the
service refuses to start without it or with a shorter one.

File modes: everything the service writes (workspace files and their -wal/-shm, the control
plane, snapshots, the admin token) is private to the user it runs as. `restrict_file_modes()`
sets that up for a whole process and `ensure_private_dir()` makes (or tightens) a data folder.

The parts: `defaults` (named constants), `table` (the environment variables), `model` (the
settings object), `loading` (the loaders), `admin_token`, `deploy_guard` (a deploy config's
args) and `file_modes`. Every name is re-exported here: `from minisphere.settings import X`.
"""

from minisphere.engine.constants import DEFAULT_SYNCHRONOUS  # read here with the other defaults
from minisphere.settings.admin_token import (
    ADMIN_TOKEN_FILE,
    MIN_ADMIN_TOKEN_CHARS,
    MIN_REMOTE_ADMIN_TOKEN_CHARS,
    is_loopback,
    stored_admin_token,
)
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
    LITESTREAM_DIR_NAME,
    MCP_LOOPBACK_HOSTS,
    PROJECT_ROOT,
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
    TOKEN_CACHE_TTL_S,
    WAKE_DEADLINE_S,
    WAKE_SHED_LATENCY_MS,
    WORKSPACE_SLOT_MODES,
    WORKSPACE_SLOT_RESOURCE,
)
from minisphere.settings.deploy_guard import (
    SECRET_ENV_NAMES,
    deploy_overrides,
)
from minisphere.settings.file_modes import (
    PRIVATE_DIR_MODE,
    PRIVATE_FILE_MODE,
    PRIVATE_UMASK,
    ensure_private_dir,
    restrict_file_modes,
)
from minisphere.settings.loading import (
    env_number,
    load_mcp_settings,
    load_replica_bounds,
    load_replication_settings,
    load_s3_settings,
    load_settings,
    load_snapshot_settings,
    load_trusted_proxies,
    load_workspace_slots_mode,
)
from minisphere.settings.model import (
    McpSettings,
    ReplicationSettings,
    ResidencySettings,
    S3Settings,
    Settings,
    SnapshotSettings,
)
from minisphere.settings.table import (
    CLIENT_ENV_VARS,
    ENV_VARS,
    EnvVar,
    env_table_markdown,
    env_value,
)

__all__ = [
    "ADMIN_TOKEN_FILE",
    "AUTO",
    "CLIENT_ENV_VARS",
    "DEFAULT_BLUEPRINT_PATH",
    "DEFAULT_DATA_DIR",
    "DEFAULT_HOST",
    "DEFAULT_HTTP_FRONT",
    "DEFAULT_MAX_BATCH_WRITES",
    "DEFAULT_MAX_REPLICAS",
    "DEFAULT_MIN_REPLICAS",
    "DEFAULT_PORT",
    "DEFAULT_RAY_NAMESPACE",
    "DEFAULT_REPLICATION_MODE",
    "DEFAULT_S3_PREFIX",
    "DEFAULT_SYNCHRONOUS",
    "DEFAULT_WORKSPACE_SLOTS_MODE",
    "ENV_VARS",
    "HIBERNATE_IDLE_S",
    "LITESTREAM_DIR_NAME",
    "MCP_LOOPBACK_HOSTS",
    "MIN_ADMIN_TOKEN_CHARS",
    "MIN_REMOTE_ADMIN_TOKEN_CHARS",
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "PRIVATE_UMASK",
    "PROJECT_ROOT",
    "RECYCLE_MAX_BINDS",
    "RECYCLE_MAX_GROWTH_MIB",
    "REPLICATION_MODES",
    "REPLICATION_SYNC_TIMEOUT_S",
    "SECRET_ENV_NAMES",
    "SNAPSHOT_DIR_NAME",
    "SNAPSHOT_EVERY_S",
    "SNAPSHOT_EVERY_WRITES",
    "SNAPSHOT_KEEP_VERSIONS",
    "SNAPSHOT_STORE_KINDS",
    "SPARE_IDLE_CPU_SHARE",
    "SPARE_MEMORY_SHARE",
    "TOKEN_CACHE_TTL_S",
    "WAKE_DEADLINE_S",
    "WAKE_SHED_LATENCY_MS",
    "WORKSPACE_SLOT_MODES",
    "WORKSPACE_SLOT_RESOURCE",
    "EnvVar",
    "McpSettings",
    "ReplicationSettings",
    "ResidencySettings",
    "S3Settings",
    "Settings",
    "SnapshotSettings",
    "deploy_overrides",
    "ensure_private_dir",
    "env_number",
    "env_table_markdown",
    "env_value",
    "is_loopback",
    "load_mcp_settings",
    "load_replica_bounds",
    "load_replication_settings",
    "load_s3_settings",
    "load_settings",
    "load_snapshot_settings",
    "load_trusted_proxies",
    "load_workspace_slots_mode",
    "restrict_file_modes",
    "stored_admin_token",
]
