"""The single table of environment variables that can be set: the loader refuses to read a name
that is not in it, `minisphere settings` prints it, and a test compares it with the
documentation's table (docs/operate/settings.md), so the three cannot drift apart."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from minisphere.engine.constants import DEFAULT_SYNCHRONOUS
from minisphere.settings.defaults import (
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
    RECYCLE_MAX_BINDS,
    RECYCLE_MAX_GROWTH_MIB,
    REPLICATION_SYNC_TIMEOUT_S,
    SNAPSHOT_EVERY_S,
    SNAPSHOT_EVERY_WRITES,
    SNAPSHOT_KEEP_VERSIONS,
    SPARE_IDLE_CPU_SHARE,
    SPARE_MEMORY_SHARE,
    WAKE_DEADLINE_S,
    WAKE_SHED_LATENCY_MS,
    WORKSPACE_SLOT_RESOURCE,
)


@dataclass(frozen=True)
class EnvVar:
    name: str
    default: str  # as documented
    meaning: str


ENV_VARS: tuple[EnvVar, ...] = (
    EnvVar(
        "MINISPHERE_DATA_DIR",
        "`./data`",
        "data folder: control plane, workspace files, admin token",
    ),
    EnvVar("MINISPHERE_HOST", f"`{DEFAULT_HOST}`", "where HTTP listens"),
    EnvVar("MINISPHERE_PORT", f"`{DEFAULT_PORT}`", "HTTP port"),
    EnvVar(
        "MINISPHERE_HTTP_FRONT",
        f"`{DEFAULT_HTTP_FRONT}`",
        "Serve's HTTP front the launcher starts Ray with: `haproxy` (its HAProxy ingress, a "
        "third of the CPU per call) or `python` (its Python proxy); on a cluster, set "
        "`RAY_SERVE_ENABLE_HA_PROXY` on every node to match",
    ),
    EnvVar(
        "MINISPHERE_ADMIN_TOKEN",
        "generated on loopback, kept in `<data>/.admin_token`",
        "admin bearer token, at least 16 characters; required on a non-loopback host, and "
        "at least 32 characters there (the service refuses to start otherwise)",
    ),
    EnvVar(
        "MINISPHERE_SYNCHRONOUS",
        f"`{DEFAULT_SYNCHRONOUS}`",
        "SQLite durability of workspace files (OFF, NORMAL, FULL, EXTRA)",
    ),
    EnvVar(
        "MINISPHERE_MAX_BATCH",
        f"`{DEFAULT_MAX_BATCH_WRITES}`",
        "most writes one group commit takes",
    ),
    EnvVar(
        "MINISPHERE_MIN_REPLICAS", f"`{DEFAULT_MIN_REPLICAS}`", "ingress autoscaling lower bound"
    ),
    EnvVar(
        "MINISPHERE_MAX_REPLICAS", f"`{DEFAULT_MAX_REPLICAS}`", "ingress autoscaling upper bound"
    ),
    EnvVar(
        "MINISPHERE_RAY_NAMESPACE",
        f"`{DEFAULT_RAY_NAMESPACE}`",
        "namespace of the named, detached actors",
    ),
    EnvVar("MINISPHERE_RAY_ADDRESS", "(start a local Ray)", "join an existing cluster"),
    EnvVar(
        "MINISPHERE_BLUEPRINT",
        "`infra/blueprint.default.json`",
        "default blueprint of new workspaces",
    ),
    EnvVar(
        "MINISPHERE_ACCESS_LOG",
        "`0`",
        "`1`: one log line per request (ours on `minisphere.requests`, and Serve's)",
    ),
    EnvVar(
        "MINISPHERE_TRUSTED_PROXIES",
        "(none)",
        "addresses or networks (comma-separated, "
        "e.g. `10.0.0.0/8`) of load balancers whose `X-Forwarded-For` names the client; "
        "from anyone else the header is ignored",
    ),
    EnvVar(
        "MINISPHERE_MCP_ALLOWED_HOSTS",
        "loopback names and `MINISPHERE_HOST`",
        "comma-separated Host headers the MCP endpoint also accepts (`name`, `name:port`, "
        "`name:*`): the names clients reach the service by (DNS-rebinding protection)",
    ),
    EnvVar(
        "MINISPHERE_MCP_ALLOWED_ORIGINS",
        "`http(s)://` of the allowed hosts",
        "comma-separated Origin headers the MCP endpoint also accepts (`https://name`, "
        "`https://name:*`); a request without Origin is not checked",
    ),
    EnvVar(
        "MINISPHERE_CONTRACTS_DIR",
        "the checkout's `contracts/`, else `<prefix>/share/minisphere/contracts`",
        "where the pinned contracts are",
    ),
    EnvVar("MINISPHERE_SNAPSHOT_STORE", "`local`", "`local` (a directory) or `s3`"),
    EnvVar("MINISPHERE_SNAPSHOT_DIR", "`<data>/snapshots`", "the local store's directory"),
    EnvVar(
        "MINISPHERE_S3_BUCKET",
        "(none)",
        "bucket of the S3 store and of contract evidence (required for `s3`)",
    ),
    EnvVar("MINISPHERE_S3_PREFIX", f"`{DEFAULT_S3_PREFIX}`", "key prefix inside the bucket"),
    EnvVar("MINISPHERE_S3_ENDPOINT_URL", "(AWS)", "an S3-compatible endpoint (MinIO, moto, ...)"),
    EnvVar("MINISPHERE_S3_REGION", "(boto3's, else `us-east-1`)", "region name"),
    EnvVar(
        "MINISPHERE_S3_ACCESS_KEY_ID",
        "(boto3's chain)",
        "credentials; empty: boto3's usual chain (`AWS_*` variables, instance role)",
    ),
    EnvVar("MINISPHERE_S3_SECRET_ACCESS_KEY", "(boto3's chain)", "the key's secret"),
    EnvVar(
        "MINISPHERE_REPLICATION",
        f"`{DEFAULT_REPLICATION_MODE}`",
        "continuous replication of resident workspaces with Litestream, to the snapshot "
        "store: `sync` (a write is answered once on the replica), `async` (answered after "
        "the local commit, shipped within about a second) or `off`",
    ),
    EnvVar(
        "MINISPHERE_REPLICATION_TIMEOUT_S",
        f"`{REPLICATION_SYNC_TIMEOUT_S:g}`",
        "`sync`: how long a write waits for the replica before it answers 503",
    ),
    EnvVar(
        "MINISPHERE_SNAPSHOT_EVERY_WRITES",
        f"`{SNAPSHOT_EVERY_WRITES}`",
        "snapshot after this many writes (0 = off)",
    ),
    EnvVar(
        "MINISPHERE_SNAPSHOT_EVERY_S",
        f"`{SNAPSHOT_EVERY_S:g}`",
        "or this many seconds, if anything changed (0 = off)",
    ),
    EnvVar(
        "MINISPHERE_SNAPSHOT_KEEP", f"`{SNAPSHOT_KEEP_VERSIONS}`", "versions kept per workspace"
    ),
    EnvVar(
        "MINISPHERE_HIBERNATE_IDLE_S",
        f"`{HIBERNATE_IDLE_S:g}`",
        "idle seconds before a workspace hibernates (0 = never)",
    ),
    EnvVar(
        "MINISPHERE_MAX_RESIDENT",
        "derived from the cluster's memory and CPUs",
        "resident workspace actors (least recently used hibernate above it)",
    ),
    EnvVar(
        "MINISPHERE_SPARE_ACTORS",
        "follows demand: the busiest minute of the last three "
        "in wakes, at least 2 per CPU of the cluster (2 to 32), within the spare budget",
        "warm, not yet bound workspace actors kept ready for wakes; a number fixes the pool "
        "(0 = none)",
    ),
    EnvVar(
        "MINISPHERE_SPARE_MEMORY_SHARE",
        f"`{SPARE_MEMORY_SHARE:g}`",
        "share of the cluster's memory a demand-following pool's spares may take",
    ),
    EnvVar(
        "MINISPHERE_SPARE_IDLE_CPU_SHARE",
        f"`{SPARE_IDLE_CPU_SHARE:g}`",
        "share of the cluster's CPUs its idle spares may take (each ~0.85% of a core)",
    ),
    EnvVar(
        "MINISPHERE_RECYCLE_MAX_BINDS",
        f"`{RECYCLE_MAX_BINDS}`",
        "binds after which a recycled workspace process is retired (0 = never recycle: "
        "every hibernation ends its process)",
    ),
    EnvVar(
        "MINISPHERE_RECYCLE_MAX_GROWTH_MIB",
        f"`{RECYCLE_MAX_GROWTH_MIB:g}`",
        "resident memory a workspace process may gain over a fresh spare's before it is "
        "retired instead of recycled",
    ),
    EnvVar(
        "MINISPHERE_WAKE_DEADLINE_S",
        f"`{WAKE_DEADLINE_S:g}`",
        "a wake expected to be bound later than this, behind the wakes under way, is "
        "refused at once with 503 `overloaded` and Retry-After (0 = never)",
    ),
    EnvVar(
        "MINISPHERE_WAKE_SHED_LATENCY_MS",
        f"`{WAKE_SHED_LATENCY_MS:g}`",
        "while calls to awake workspaces take longer than this at an ingress replica "
        "(median over a second), it refuses new wakes at once with 503 `overloaded` and "
        "Retry-After (0 = never)",
    ),
    EnvVar(
        "MINISPHERE_WORKSPACE_SLOTS",
        f"`{DEFAULT_WORKSPACE_SLOTS_MODE}`",
        f"each workspace actor asks for one `{WORKSPACE_SLOT_RESOURCE}` resource: `on`, "
        "`off`, or `auto` (when some live node advertises it)",
    ),
    EnvVar(
        "MINISPHERE_NODE_WORKSPACE_SLOTS",
        "half the node's memory / 64 MiB",
        f"`{WORKSPACE_SLOT_RESOURCE}` the node `minisphere serve` starts advertises "
        "(`ray start` nodes: `--resources`)",
    ),
)

# Read by the client and the CLI, not by the service.
CLIENT_ENV_VARS: tuple[EnvVar, ...] = (
    EnvVar("MINISPHERE_URL", "`http://127.0.0.1:8000`", "the service the client and CLI call"),
    EnvVar("MINISPHERE_WORKSPACE", "(none)", "workspace of the CLI's workspace commands"),
    EnvVar(
        "MINISPHERE_TOKEN", "(the admin token)", "workspace token of the CLI's workspace commands"
    ),
    EnvVar(
        "MINISPHERE_APP_DIR",
        "the checkout, else `.`",
        "where `minisphere serve` finds `serve_app.py` and `actors/`",
    ),
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
