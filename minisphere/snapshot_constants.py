"""Named defaults of durability: snapshots, their stores, background retries, hibernation.

Units are in the names. The service reads overrides from the environment (see `config.py`).
"""

# --- Snapshot format ---
SNAPSHOT_FORMAT_VERSION = 1            # bumped when the manifest's meaning changes
SNAPSHOT_BLOB_SUFFIX = ".db.gz"        # gzip of the SQLite file (stdlib; no zstd dependency)
SNAPSHOT_MANIFEST_SUFFIX = ".json"     # written last: a version exists once its manifest does
SNAPSHOT_GZIP_LEVEL = 6
SNAPSHOT_COPY_CHUNK_BYTES = 1024 * 1024
SNAPSHOT_KEEP_VERSIONS = 20            # older versions of a workspace are pruned after a snapshot
SNAPSHOT_MAX_MANIFEST_BYTES = 64 * 1024
RESTORE_ASIDE_KEEP = 1                 # pre-restore copies of the live file kept next to it

# --- When to snapshot (service) ---
SNAPSHOT_EVERY_WRITES = 1000           # acknowledged writes since the last snapshot
SNAPSHOT_EVERY_S = 300.0               # seconds since the last snapshot, if anything changed
SNAPSHOT_POLL_S = 1.0                  # how often the background snapshotter looks

# --- Background retry after a failed snapshot (exponential backoff with jitter) ---
SNAPSHOT_BACKOFF_INITIAL_S = 1.0
SNAPSHOT_BACKOFF_FACTOR = 2.0
SNAPSHOT_BACKOFF_MAX_S = 300.0
SNAPSHOT_BACKOFF_JITTER_RATIO = 0.1    # +/- this share of the delay, so many actors spread out

# --- S3 client ---
S3_CONNECT_TIMEOUT_S = 2.0
S3_READ_TIMEOUT_S = 30.0
S3_MAX_ATTEMPTS = 3                    # botocore "standard" retry mode, attempts in total

# --- Hibernation and residency (service) ---
HIBERNATE_IDLE_S = 600.0               # an actor with no call for this long hibernates
MAX_RESIDENT_WORKSPACES = 256          # resident workspace actors per directory (LRU above it)
IDLE_SWEEP_S = 5.0                     # how often the directory looks for idle actors
