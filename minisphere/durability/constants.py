"""Named constants of snapshots, their stores and background retries (units in the names).

What an operator may change (snapshot triggers, versions kept, the store itself) lives in
`minisphere.settings`; these are properties of the format and of the retry policy.
"""

# --- Snapshot format ---
SNAPSHOT_FORMAT_VERSION = 1  # bumped when the manifest's meaning changes
SNAPSHOT_BLOB_SUFFIX = ".db.gz"  # gzip of the SQLite file (stdlib; no zstd dependency)
SNAPSHOT_MANIFEST_SUFFIX = ".json"  # written last: a version exists once its manifest does
SNAPSHOT_GZIP_LEVEL = 6
SNAPSHOT_COPY_CHUNK_BYTES = 1024 * 1024
SNAPSHOT_MAX_MANIFEST_BYTES = 64 * 1024
RESTORE_ASIDE_KEEP = 1  # pre-restore copies of the live file kept next to it
SNAPSHOT_POLL_S = 1.0  # how often the background snapshotter looks

# --- Background retry after a failed snapshot (exponential backoff with jitter) ---
SNAPSHOT_BACKOFF_INITIAL_S = 1.0
SNAPSHOT_BACKOFF_FACTOR = 2.0
SNAPSHOT_BACKOFF_MAX_S = 300.0
SNAPSHOT_BACKOFF_JITTER_RATIO = 0.1  # +/- this share of the delay, so many actors spread out

# --- S3 client (snapshots and contract evidence) ---
S3_CONNECT_TIMEOUT_S = 2.0
S3_READ_TIMEOUT_S = 30.0
S3_MAX_ATTEMPTS = 3  # botocore "standard" retry mode, attempts in total
S3_DEFAULT_REGION = "us-east-1"  # when neither the settings nor boto3 name one
