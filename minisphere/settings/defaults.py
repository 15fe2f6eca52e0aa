"""The settings' defaults, as named constants with their units in the names."""

from __future__ import annotations

from pathlib import Path

DEFAULT_DATA_DIR = "data"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
# Serve's HTTP front: its HAProxy ingress takes a third of the machine CPU per call of its Python
# proxy (bench/results/call-cost.md); the Python proxy stays a setting.
HTTP_FRONTS = ("haproxy", "python")
DEFAULT_HTTP_FRONT = "haproxy"
# The MCP endpoint's DNS-rebinding protection accepts these host names (any port) in the Host
# and Origin headers, besides MINISPHERE_HOST and the names MINISPHERE_MCP_ALLOWED_* add.
MCP_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
DEFAULT_RAY_NAMESPACE = "minisphere"
DEFAULT_MAX_BATCH_WRITES = 256  # most writes one group commit takes
DEFAULT_MIN_REPLICAS = 1
DEFAULT_MAX_REPLICAS = 2
TOKEN_CACHE_TTL_S = 30.0  # how long an ingress replica trusts its token-hash cache
PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the checkout, when run from source
DEFAULT_BLUEPRINT_PATH = PROJECT_ROOT / "infra" / "blueprint.default.json"

SNAPSHOT_STORE_KINDS = ("local", "s3")
SNAPSHOT_DIR_NAME = "snapshots"
DEFAULT_S3_PREFIX = "minisphere/"
SNAPSHOT_EVERY_WRITES = 1000  # acknowledged writes since the last snapshot
SNAPSHOT_EVERY_S = 300.0  # seconds since the last snapshot, if anything changed
SNAPSHOT_KEEP_VERSIONS = 20  # older versions of a workspace are pruned after a snapshot
# An actor with no call for this long hibernates. An idle resident costs CPU for every second it
# waits (Ray's own upkeep of the process), a hibernation and a wake into the recycled process a
# fixed amount once: past the silence where the two are equal, letting it go is the cheaper bet
# (rent or buy).
HIBERNATE_IDLE_S = 10.0
AUTO = 0  # MAX_RESIDENT / SPARE_ACTORS: derived from the cluster
# With MINISPHERE_SPARE_ACTORS unset the spare pool follows demand, within these shares of the
# cluster for its idle spares (control/residency_policy.spare_budget)
SPARE_MEMORY_SHARE = 0.10  # of the cluster's memory
SPARE_IDLE_CPU_SHARE = 0.10  # of the cluster's CPUs, spent idle
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
WORKSPACE_SLOT_MODES = ("auto", "on", "off")  # auto: ask when some live node advertises slots
DEFAULT_WORKSPACE_SLOTS_MODE = "auto"
REPLICATION_MODES = ("sync", "async", "off")
DEFAULT_REPLICATION_MODE = "async"  # the embedded default; a cluster config sets sync
REPLICATION_SYNC_TIMEOUT_S = 5.0  # a sync-mode batch waits this long for the replica
LITESTREAM_DIR_NAME = "litestream"  # the node's daemon: config, socket, pid file, log
