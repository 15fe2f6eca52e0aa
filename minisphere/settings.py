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
"""
from __future__ import annotations

import ipaddress
import logging
import os
import secrets
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from minisphere.engine.constants import DEFAULT_SYNCHRONOUS
from minisphere.engine.db import SYNCHRONOUS_MODES
from minisphere.errors import ConfigError

# ---- defaults (units in the names) --------------------------------------------------------------
DEFAULT_DATA_DIR = "data"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
# The MCP endpoint's DNS-rebinding protection accepts these host names (any port) in the Host
# and Origin headers, besides MINISPHERE_HOST and the names MINISPHERE_MCP_ALLOWED_* add.
MCP_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
_WILDCARD_HOSTS = ("0.0.0.0", "::", "")
DEFAULT_RAY_NAMESPACE = "minisphere"
DEFAULT_MAX_BATCH_WRITES = 256         # most writes one group commit takes
DEFAULT_MIN_REPLICAS = 1
DEFAULT_MAX_REPLICAS = 2
TOKEN_CACHE_TTL_S = 30.0               # how long an ingress replica trusts its token-hash cache
MIN_ADMIN_TOKEN_CHARS = 16
# Off loopback anyone who can reach the port can guess: wrong guesses are rate limited per
# address, but many addresses guess in parallel, so the token itself must be out of reach
# (32 random URL-safe characters are about 190 bits).
MIN_REMOTE_ADMIN_TOKEN_CHARS = 32
ADMIN_TOKEN_FILE = ".admin_token"
PROJECT_ROOT = Path(__file__).resolve().parent.parent     # the checkout, when run from source
DEFAULT_BLUEPRINT_PATH = PROJECT_ROOT / "infra" / "blueprint.default.json"

SNAPSHOT_STORE_KINDS = ("local", "s3")
SNAPSHOT_DIR_NAME = "snapshots"
DEFAULT_S3_PREFIX = "minisphere/"
SNAPSHOT_EVERY_WRITES = 1000           # acknowledged writes since the last snapshot
SNAPSHOT_EVERY_S = 300.0               # seconds since the last snapshot, if anything changed
SNAPSHOT_KEEP_VERSIONS = 20            # older versions of a workspace are pruned after a snapshot
# An actor with no call for this long hibernates. An idle resident costs CPU for every second it
# waits (Ray's own upkeep of the process), a hibernation and a wake into the recycled process a
# fixed amount once: past the silence where the two are equal, letting it go is the cheaper bet
# (rent or buy).
HIBERNATE_IDLE_S = 10.0
AUTO = 0                               # MAX_RESIDENT / SPARE_ACTORS: derived from the cluster
# With MINISPHERE_SPARE_ACTORS unset the spare pool follows demand, within these shares of the
# cluster for its idle spares (control/residency_policy.spare_budget)
SPARE_MEMORY_SHARE = 0.10              # of the cluster's memory
SPARE_IDLE_CPU_SHARE = 0.10            # of the cluster's CPUs, spent idle
# A hibernated workspace's process goes back to the spare pool; it is retired (killed) after
# this many binds, or once its resident memory has grown this far past what it had as a fresh
# spare, so no long-lived process grows without end.
RECYCLE_MAX_BINDS = 1000
RECYCLE_MAX_GROWTH_MIB = 64.0
# A wake expected to wait longer than this behind the wakes already under way is refused at once
# (503 `overloaded` with Retry-After) rather than left to time out (0 = never refused).
WAKE_DEADLINE_S = 2.0
# While the calls an ingress replica sends to workspaces already awake take longer than this
# (their median over the last second), it refuses new wakes at once with 503 `overloaded`: a
# wake brings a whole session of calls, and the machine is already late with the ones it has.
WAKE_SHED_LATENCY_MS = 250.0
# Workspace slots: a custom Ray resource each node advertises in proportion to its memory. Every
# workspace actor (bound or spare) asks for one, so Ray spreads them by capacity and a wake with
# no free slot left is a pending actor: demand the autoscaler answers with another node.
WORKSPACE_SLOT_RESOURCE = "minisphere_workspace_slots"
WORKSPACE_SLOT_MODES = ("auto", "on", "off")   # auto: ask when some live node advertises slots
DEFAULT_WORKSPACE_SLOTS_MODE = "auto"
REPLICATION_MODES = ("sync", "async", "off")
DEFAULT_REPLICATION_MODE = "async"   # the embedded default; a cluster config sets sync
REPLICATION_SYNC_TIMEOUT_S = 5.0       # a sync-mode batch waits this long for the replica
LITESTREAM_DIR_NAME = "litestream"     # the node's daemon: config, socket, pid file, log
PRIVATE_UMASK = 0o077                  # what a process of the service creates: owner only
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600

log = logging.getLogger("minisphere.settings")


# ---- file modes ---------------------------------------------------------------------------------
def restrict_file_modes() -> int:
    """Make every file and folder this process creates from now on private to its user (files
    0600, folders 0700); returns the previous umask.

    Why a umask and not a mode on each open: most of the service's files are not created by our
    own `open` calls. SQLite creates the database file itself (0644 minus the umask) and then
    gives its -wal, -shm and -journal files the database's mode; the online backup API, the
    control plane, temporary copies and other libraries create theirs the same way. The process
    umask is the one setting every one of those creations obeys. Call it first thing in every
    process that writes data (the launcher, each actor), before any file is opened. It is
    process-wide (all threads); the previous value is returned so a test can put it back."""
    return os.umask(PRIVATE_UMASK)


def ensure_private_dir(path: str | os.PathLike[str]) -> Path:
    """`path` as a folder only its owner can enter (0700): created if missing (missing parents
    too, each 0700), tightened if it exists with group or other bits. A folder 0700 also shields
    files inside it that an older build created world-readable. A folder this user may not
    chmod (a volume's mount point owned by someone else) is left as it is, with a warning."""
    folder = Path(path)
    missing = []
    probe = folder
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for created in reversed(missing):
        try:
            created.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:             # made meanwhile by another process: tightened below
            pass
        _tighten(created)
    if not folder.is_dir():
        raise FileExistsError(f"{folder} exists and is not a folder")
    if not missing:
        _tighten(folder)
    return folder


def _tighten(folder: Path) -> None:
    try:
        mode = stat.S_IMODE(folder.stat().st_mode)
        if mode & ~PRIVATE_DIR_MODE & 0o777:
            os.chmod(folder, PRIVATE_DIR_MODE)
    except PermissionError as exc:
        log.warning("cannot make %s private (mode 0700): %s", folder, exc)


# ---- the table of environment variables ---------------------------------------------------------
@dataclass(frozen=True)
class EnvVar:
    name: str
    default: str          # as documented
    meaning: str


ENV_VARS: tuple[EnvVar, ...] = (
    EnvVar("MINISPHERE_DATA_DIR", "`./data`", "data folder: control plane, workspace files, "
           "admin token"),
    EnvVar("MINISPHERE_HOST", f"`{DEFAULT_HOST}`", "where HTTP listens"),
    EnvVar("MINISPHERE_PORT", f"`{DEFAULT_PORT}`", "HTTP port"),
    EnvVar("MINISPHERE_ADMIN_TOKEN", "generated on loopback, kept in `<data>/.admin_token`",
           "admin bearer token, at least 16 characters; required on a non-loopback host, and "
           "at least 32 characters there (the service refuses to start otherwise)"),
    EnvVar("MINISPHERE_SYNCHRONOUS", f"`{DEFAULT_SYNCHRONOUS}`",
           "SQLite durability of workspace files (OFF, NORMAL, FULL, EXTRA)"),
    EnvVar("MINISPHERE_MAX_BATCH", f"`{DEFAULT_MAX_BATCH_WRITES}`",
           "most writes one group commit takes"),
    EnvVar("MINISPHERE_MIN_REPLICAS", f"`{DEFAULT_MIN_REPLICAS}`",
           "ingress autoscaling lower bound"),
    EnvVar("MINISPHERE_MAX_REPLICAS", f"`{DEFAULT_MAX_REPLICAS}`",
           "ingress autoscaling upper bound"),
    EnvVar("MINISPHERE_RAY_NAMESPACE", f"`{DEFAULT_RAY_NAMESPACE}`",
           "namespace of the named, detached actors"),
    EnvVar("MINISPHERE_RAY_ADDRESS", "(start a local Ray)", "join an existing cluster"),
    EnvVar("MINISPHERE_BLUEPRINT", "`infra/blueprint.default.json`",
           "default blueprint of new workspaces"),
    EnvVar("MINISPHERE_ACCESS_LOG", "`0`", "`1`: Serve logs one line per request"),
    EnvVar("MINISPHERE_TRUSTED_PROXIES", "(none)", "addresses or networks (comma-separated, "
           "e.g. `10.0.0.0/8`) of load balancers whose `X-Forwarded-For` names the client; "
           "from anyone else the header is ignored"),
    EnvVar("MINISPHERE_MCP_ALLOWED_HOSTS", "loopback names and `MINISPHERE_HOST`",
           "comma-separated Host headers the MCP endpoint also accepts (`name`, `name:port`, "
           "`name:*`): the names clients reach the service by (DNS-rebinding protection)"),
    EnvVar("MINISPHERE_MCP_ALLOWED_ORIGINS", "`http(s)://` of the allowed hosts",
           "comma-separated Origin headers the MCP endpoint also accepts (`https://name`, "
           "`https://name:*`); a request without Origin is not checked"),
    EnvVar("MINISPHERE_CONTRACTS_DIR", "the checkout's `contracts/`, else "
           "`<prefix>/share/minisphere/contracts`", "where the pinned contracts are"),
    EnvVar("MINISPHERE_SNAPSHOT_STORE", "`local`", "`local` (a directory) or `s3`"),
    EnvVar("MINISPHERE_SNAPSHOT_DIR", "`<data>/snapshots`", "the local store's directory"),
    EnvVar("MINISPHERE_S3_BUCKET", "(none)", "bucket of the S3 store and of contract evidence "
           "(required for `s3`)"),
    EnvVar("MINISPHERE_S3_PREFIX", f"`{DEFAULT_S3_PREFIX}`", "key prefix inside the bucket"),
    EnvVar("MINISPHERE_S3_ENDPOINT_URL", "(AWS)", "an S3-compatible endpoint (MinIO, moto, ...)"),
    EnvVar("MINISPHERE_S3_REGION", "(boto3's, else `us-east-1`)", "region name"),
    EnvVar("MINISPHERE_S3_ACCESS_KEY_ID", "(boto3's chain)",
           "credentials; empty: boto3's usual chain (`AWS_*` variables, instance role)"),
    EnvVar("MINISPHERE_S3_SECRET_ACCESS_KEY", "(boto3's chain)", "the key's secret"),
    EnvVar("MINISPHERE_REPLICATION", f"`{DEFAULT_REPLICATION_MODE}`",
           "continuous replication of resident workspaces with Litestream, to the snapshot "
           "store: `sync` (a write is answered once on the replica), `async` (answered after "
           "the local commit, shipped within about a second) or `off`"),
    EnvVar("MINISPHERE_REPLICATION_TIMEOUT_S", f"`{REPLICATION_SYNC_TIMEOUT_S:g}`",
           "`sync`: how long a write waits for the replica before it answers 503"),
    EnvVar("MINISPHERE_SNAPSHOT_EVERY_WRITES", f"`{SNAPSHOT_EVERY_WRITES}`",
           "snapshot after this many writes (0 = off)"),
    EnvVar("MINISPHERE_SNAPSHOT_EVERY_S", f"`{SNAPSHOT_EVERY_S:g}`",
           "or this many seconds, if anything changed (0 = off)"),
    EnvVar("MINISPHERE_SNAPSHOT_KEEP", f"`{SNAPSHOT_KEEP_VERSIONS}`",
           "versions kept per workspace"),
    EnvVar("MINISPHERE_HIBERNATE_IDLE_S", f"`{HIBERNATE_IDLE_S:g}`",
           "idle seconds before a workspace hibernates (0 = never)"),
    EnvVar("MINISPHERE_MAX_RESIDENT", "derived from the cluster's memory and CPUs",
           "resident workspace actors (least recently used hibernate above it)"),
    EnvVar("MINISPHERE_SPARE_ACTORS", "follows demand: the busiest minute of the last three "
           "in wakes, at least 2 per CPU of the cluster (2 to 32), within the spare budget",
           "warm, not yet bound workspace actors kept ready for wakes; a number fixes the pool "
           "(0 = none)"),
    EnvVar("MINISPHERE_SPARE_MEMORY_SHARE", f"`{SPARE_MEMORY_SHARE:g}`",
           "share of the cluster's memory a demand-following pool's spares may take"),
    EnvVar("MINISPHERE_SPARE_IDLE_CPU_SHARE", f"`{SPARE_IDLE_CPU_SHARE:g}`",
           "share of the cluster's CPUs its idle spares may take (each ~0.85% of a core)"),
    EnvVar("MINISPHERE_RECYCLE_MAX_BINDS", f"`{RECYCLE_MAX_BINDS}`",
           "binds after which a recycled workspace process is retired (0 = never recycle: "
           "every hibernation ends its process)"),
    EnvVar("MINISPHERE_RECYCLE_MAX_GROWTH_MIB", f"`{RECYCLE_MAX_GROWTH_MIB:g}`",
           "resident memory a workspace process may gain over a fresh spare's before it is "
           "retired instead of recycled"),
    EnvVar("MINISPHERE_WAKE_DEADLINE_S", f"`{WAKE_DEADLINE_S:g}`",
           "a wake expected to be bound later than this, behind the wakes under way, is "
           "refused at once with 503 `overloaded` and Retry-After (0 = never)"),
    EnvVar("MINISPHERE_WAKE_SHED_LATENCY_MS", f"`{WAKE_SHED_LATENCY_MS:g}`",
           "while calls to awake workspaces take longer than this at an ingress replica "
           "(median over a second), it refuses new wakes at once with 503 `overloaded` and "
           "Retry-After (0 = never)"),
    EnvVar("MINISPHERE_WORKSPACE_SLOTS", f"`{DEFAULT_WORKSPACE_SLOTS_MODE}`",
           f"each workspace actor asks for one `{WORKSPACE_SLOT_RESOURCE}` resource: `on`, "
           "`off`, or `auto` (when some live node advertises it)"),
    EnvVar("MINISPHERE_NODE_WORKSPACE_SLOTS", "half the node's memory / 64 MiB",
           f"`{WORKSPACE_SLOT_RESOURCE}` the node `minisphere serve` starts advertises "
           "(`ray start` nodes: `--resources`)"),
)

# Read by the client and the CLI, not by the service.
CLIENT_ENV_VARS: tuple[EnvVar, ...] = (
    EnvVar("MINISPHERE_URL", "`http://127.0.0.1:8000`", "the service the client and CLI call"),
    EnvVar("MINISPHERE_WORKSPACE", "(none)", "workspace of the CLI's workspace commands"),
    EnvVar("MINISPHERE_TOKEN", "(the admin token)", "workspace token of the CLI's workspace "
           "commands"),
    EnvVar("MINISPHERE_APP_DIR", "the checkout, else `.`",
           "where `minisphere serve` finds `serve_app.py` and `actors/`"),
)
_KNOWN = {var.name for var in ENV_VARS + CLIENT_ENV_VARS}


def env_table_markdown(variables: tuple[EnvVar, ...] = ENV_VARS) -> str:
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    rows += [f"| `{v.name}` | {v.default} | {v.meaning} |" for v in variables]
    return "\n".join(rows)


def env_value(name: str, env: Mapping[str, str] | None = None) -> str:
    """The stripped value of a documented variable ('' when unset)."""
    if name not in _KNOWN:
        raise KeyError(f"{name} is not in minisphere.settings.ENV_VARS; document it there first")
    return ((os.environ if env is None else env).get(name) or "").strip()


# ---- the settings object ------------------------------------------------------------------------
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
    store: str = "local"                  # local | s3
    local_dir: str = ""
    s3: S3Settings = field(default_factory=S3Settings)
    every_writes: int = SNAPSHOT_EVERY_WRITES
    every_s: float = SNAPSHOT_EVERY_S
    keep: int = SNAPSHOT_KEEP_VERSIONS

    def describe(self) -> str:
        return self.s3.describe() if self.store == "s3" else self.local_dir


@dataclass(frozen=True)
class ReplicationSettings:
    mode: str = DEFAULT_REPLICATION_MODE      # sync | async | off
    sync_timeout_s: float = REPLICATION_SYNC_TIMEOUT_S
    daemon_dir: str = ""                      # the node's Litestream folder (<data>/litestream)

    @property
    def enabled(self) -> bool:
        return self.mode != "off"


@dataclass(frozen=True)
class ResidencySettings:
    hibernate_idle_s: float = HIBERNATE_IDLE_S
    max_resident: int = AUTO               # AUTO: control/residency_policy.derived_resident_cap
    spare_actors: int | None = None        # None: the pool follows demand (residency_policy)
    spare_memory_share: float = SPARE_MEMORY_SHARE       # the demand-following pool's budget
    spare_idle_cpu_share: float = SPARE_IDLE_CPU_SHARE
    recycle_max_binds: int = RECYCLE_MAX_BINDS            # 0: a hibernated process is killed
    recycle_max_growth_mib: float = RECYCLE_MAX_GROWTH_MIB
    wake_deadline_s: float = WAKE_DEADLINE_S              # 0: wakes are never refused
    wake_shed_latency_ms: float = WAKE_SHED_LATENCY_MS    # 0: never refused for late calls
    workspace_slots: str = DEFAULT_WORKSPACE_SLOTS_MODE     # auto | on | off
    node_workspace_slots: int = AUTO       # AUTO: actors/directory/placement.node_workspace_slots


def _any_port(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(value for name in names for value in (name, f"{name}:*"))


def _origins_of(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{scheme}://{value}" for scheme in ("http", "https")
                 for value in _any_port(names))


@dataclass(frozen=True)
class McpSettings:
    """The Host and Origin headers the MCP endpoint accepts (its DNS-rebinding protection: a
    web page must not reach a service on this machine through a name that resolves here)."""
    allowed_hosts: tuple[str, ...] = _any_port(MCP_LOOPBACK_HOSTS)
    allowed_origins: tuple[str, ...] = _origins_of(MCP_LOOPBACK_HOSTS)


@dataclass(frozen=True)
class Settings:
    data_dir: str
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    admin_token: str = ""
    admin_token_source: str = "env"          # env | file | generated
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


# ---- loading ------------------------------------------------------------------------------------
def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


Number = TypeVar("Number", int, float)
Default = TypeVar("Default", int, float, None)    # None: unset means "decided elsewhere"


def env_number(env: Mapping[str, str], name: str, default: Default, low: float, high: float,
               *, kind: Callable[[str], Number] = int) -> Number | Default:
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


def stored_admin_token(data_dir: Path) -> tuple[str, str]:
    """Read `<data>/.admin_token`, creating it (exclusively, 0600) if absent."""
    path = data_dir / ADMIN_TOKEN_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        token = path.read_text(encoding="utf-8").strip()
        if len(token) < MIN_ADMIN_TOKEN_CHARS:
            raise ConfigError(f"{path} holds no usable admin token; delete it to regenerate"
                              ) from None
        return token, "file"
    token = "msa_" + secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    return token, "generated"


def load_s3_settings(env: Mapping[str, str] | None = None) -> S3Settings:
    env = os.environ if env is None else env
    prefix = (env["MINISPHERE_S3_PREFIX"] if "MINISPHERE_S3_PREFIX" in env
              else DEFAULT_S3_PREFIX).strip().strip("/")
    return S3Settings(
        bucket=env_value("MINISPHERE_S3_BUCKET", env), prefix=prefix + "/" if prefix else "",
        endpoint_url=env_value("MINISPHERE_S3_ENDPOINT_URL", env),
        region=env_value("MINISPHERE_S3_REGION", env),
        access_key_id=env_value("MINISPHERE_S3_ACCESS_KEY_ID", env),
        secret_access_key=env_value("MINISPHERE_S3_SECRET_ACCESS_KEY", env))


def load_snapshot_settings(data_dir: str | Path, env: Mapping[str, str]) -> SnapshotSettings:
    store = env_value("MINISPHERE_SNAPSHOT_STORE", env).lower() or "local"
    if store not in SNAPSHOT_STORE_KINDS:
        raise ConfigError(f"MINISPHERE_SNAPSHOT_STORE must be local or s3, got {store!r}")
    s3 = load_s3_settings(env)
    if store == "s3" and not s3.bucket:
        raise ConfigError("MINISPHERE_SNAPSHOT_STORE=s3 needs MINISPHERE_S3_BUCKET")
    local_dir = env_value("MINISPHERE_SNAPSHOT_DIR", env) or str(Path(data_dir) / SNAPSHOT_DIR_NAME)
    return SnapshotSettings(
        store=store, local_dir=str(Path(local_dir).expanduser().resolve()), s3=s3,
        every_writes=env_number(env, "MINISPHERE_SNAPSHOT_EVERY_WRITES", SNAPSHOT_EVERY_WRITES,
                                0, 10**9),
        every_s=env_number(env, "MINISPHERE_SNAPSHOT_EVERY_S", SNAPSHOT_EVERY_S, 0,
                           86_400 * 30, kind=float),
        keep=env_number(env, "MINISPHERE_SNAPSHOT_KEEP", SNAPSHOT_KEEP_VERSIONS, 1, 10_000))


def load_replication_settings(data_dir: Path, env: Mapping[str, str]) -> ReplicationSettings:
    mode = env_value("MINISPHERE_REPLICATION", env).lower() or DEFAULT_REPLICATION_MODE
    if mode not in REPLICATION_MODES:
        raise ConfigError(f"MINISPHERE_REPLICATION must be sync, async or off, got {mode!r}")
    return ReplicationSettings(
        mode=mode, daemon_dir=str(data_dir / LITESTREAM_DIR_NAME),
        sync_timeout_s=env_number(env, "MINISPHERE_REPLICATION_TIMEOUT_S",
                                  REPLICATION_SYNC_TIMEOUT_S, 1, 300, kind=float))


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
    max_replicas = env_number(env, "MINISPHERE_MAX_REPLICAS",
                              max(DEFAULT_MAX_REPLICAS, min_replicas), min_replicas, 64)
    return min_replicas, max_replicas


# Never carried in a deploy config's `args`: Serve shows an application's args to anyone who
# can read its status, so secrets stay in the nodes' environment.
SECRET_ENV_NAMES = frozenset({"MINISPHERE_ADMIN_TOKEN", "MINISPHERE_S3_ACCESS_KEY_ID",
                              "MINISPHERE_S3_SECRET_ACCESS_KEY"})


def deploy_overrides(args: Mapping[str, object]) -> dict[str, str]:
    """The `MINISPHERE_*` settings a `serve deploy` config passes as its application's `args`,
    checked: only documented service variables, no secret, every value a string (numbers and
    booleans as YAML writes them are turned into their text). A mistyped name stops the deploy
    here, naming it, instead of being silently ignored."""
    known = {var.name for var in ENV_VARS}
    unknown = sorted(str(name) for name in args if name not in known)
    if unknown:
        raise ConfigError(f"unknown setting(s) in the application's args: {', '.join(unknown)} "
                          "(see `minisphere settings`)")
    secret = sorted(SECRET_ENV_NAMES & set(args))
    if secret:
        raise ConfigError(f"{', '.join(secret)} must come from the nodes' environment, not the "
                          "deploy config (Serve shows an application's args)")
    return {name: str(value).lower() if isinstance(value, bool) else str(value)
            for name, value in args.items()}


def load_trusted_proxies(env: Mapping[str, str]) -> tuple[str, ...]:
    """MINISPHERE_TRUSTED_PROXIES as normalized networks; `ConfigError` naming a bad one."""
    networks = []
    for item in filter(None, (p.strip() for p in env_value("MINISPHERE_TRUSTED_PROXIES",
                                                            env).split(","))):
        try:
            networks.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise ConfigError(f"MINISPHERE_TRUSTED_PROXIES: {item!r} is not an address or "
                              "network") from None
    return tuple(networks)


def _listed(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in env_value(name, env).split(",") if part.strip())


def load_mcp_settings(host: str, env: Mapping[str, str]) -> McpSettings:
    """Loopback names and the service's own host, any port, plus the listed ones."""
    names = MCP_LOOPBACK_HOSTS + (() if host in _WILDCARD_HOSTS + MCP_LOOPBACK_HOSTS else
                                  (f"[{host}]" if ":" in host else host,))
    return McpSettings(
        allowed_hosts=_any_port(names) + _listed(env, "MINISPHERE_MCP_ALLOWED_HOSTS"),
        allowed_origins=_origins_of(names) + _listed(env, "MINISPHERE_MCP_ALLOWED_ORIGINS"))


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Every setting from `env` (default: the process environment); `ConfigError` when one is
    unusable, before anything is created on disk."""
    env = os.environ if env is None else env
    data_dir = Path(env_value("MINISPHERE_DATA_DIR", env) or DEFAULT_DATA_DIR).expanduser().resolve()
    host = env_value("MINISPHERE_HOST", env) or DEFAULT_HOST
    synchronous = (env_value("MINISPHERE_SYNCHRONOUS", env) or DEFAULT_SYNCHRONOUS).upper()
    if synchronous not in SYNCHRONOUS_MODES:
        raise ConfigError(f"MINISPHERE_SYNCHRONOUS must be OFF, NORMAL, FULL or EXTRA, "
                          f"got {synchronous!r}")
    token, source = env_value("MINISPHERE_ADMIN_TOKEN", env), "env"
    if token and len(token) < MIN_ADMIN_TOKEN_CHARS:
        raise ConfigError(f"MINISPHERE_ADMIN_TOKEN must be at least {MIN_ADMIN_TOKEN_CHARS} "
                          "characters")
    if not token and not is_loopback(host):
        raise ConfigError(f"refusing to listen on non-loopback host {host!r} without "
                          "MINISPHERE_ADMIN_TOKEN; set a long random admin token")
    if not is_loopback(host) and len(token) < MIN_REMOTE_ADMIN_TOKEN_CHARS:
        raise ConfigError(
            f"refusing to listen on non-loopback host {host!r} with a {len(token)}-character "
            f"MINISPHERE_ADMIN_TOKEN: off loopback it must be at least "
            f"{MIN_REMOTE_ADMIN_TOKEN_CHARS} characters (e.g. python -c \"import secrets; "
            "print(secrets.token_urlsafe(32))\")")
    port = env_number(env, "MINISPHERE_PORT", DEFAULT_PORT, 1, 65535)
    max_batch = env_number(env, "MINISPHERE_MAX_BATCH", DEFAULT_MAX_BATCH_WRITES, 1, 10_000)
    min_replicas, max_replicas = load_replica_bounds(env)
    snapshots = load_snapshot_settings(data_dir, env)
    replication = load_replication_settings(data_dir, env)
    residency = ResidencySettings(
        hibernate_idle_s=env_number(env, "MINISPHERE_HIBERNATE_IDLE_S", HIBERNATE_IDLE_S, 0,
                                    86_400 * 365, kind=float),
        max_resident=env_number(env, "MINISPHERE_MAX_RESIDENT", AUTO, 1, 1_000_000),
        spare_actors=env_number(env, "MINISPHERE_SPARE_ACTORS", None, 0, 1_000),
        spare_memory_share=env_number(env, "MINISPHERE_SPARE_MEMORY_SHARE", SPARE_MEMORY_SHARE,
                                      0.0, 1.0, kind=float),
        spare_idle_cpu_share=env_number(env, "MINISPHERE_SPARE_IDLE_CPU_SHARE",
                                        SPARE_IDLE_CPU_SHARE, 0.0, 1.0, kind=float),
        recycle_max_binds=env_number(env, "MINISPHERE_RECYCLE_MAX_BINDS", RECYCLE_MAX_BINDS, 0,
                                     1_000_000),
        recycle_max_growth_mib=env_number(env, "MINISPHERE_RECYCLE_MAX_GROWTH_MIB",
                                          RECYCLE_MAX_GROWTH_MIB, 1.0, 1_000_000.0, kind=float),
        wake_deadline_s=env_number(env, "MINISPHERE_WAKE_DEADLINE_S", WAKE_DEADLINE_S, 0.0,
                                   3600.0, kind=float),
        wake_shed_latency_ms=env_number(env, "MINISPHERE_WAKE_SHED_LATENCY_MS",
                                        WAKE_SHED_LATENCY_MS, 0.0, 3_600_000.0, kind=float),
        workspace_slots=load_workspace_slots_mode(env),
        node_workspace_slots=env_number(env, "MINISPHERE_NODE_WORKSPACE_SLOTS", AUTO, 1,
                                        1_000_000))
    ensure_private_dir(data_dir)                    # only once everything else is valid
    if not token:
        token, source = stored_admin_token(data_dir)
    return Settings(
        data_dir=str(data_dir), host=host, port=port, admin_token=token,
        admin_token_source=source,
        namespace=env_value("MINISPHERE_RAY_NAMESPACE", env) or DEFAULT_RAY_NAMESPACE,
        ray_address=env_value("MINISPHERE_RAY_ADDRESS", env), synchronous=synchronous,
        max_batch=max_batch, min_replicas=min_replicas, max_replicas=max_replicas,
        blueprint_path=env_value("MINISPHERE_BLUEPRINT", env) or str(DEFAULT_BLUEPRINT_PATH),
        access_log=env_value("MINISPHERE_ACCESS_LOG", env).lower() in ("1", "true", "yes"),
        trusted_proxies=load_trusted_proxies(env),
        snapshots=snapshots, residency=residency, replication=replication,
        mcp=load_mcp_settings(host, env))
