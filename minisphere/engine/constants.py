"""Named defaults and limits of the engine. Units are in the names."""

from typing import Final

# --- Input limits (validated at the boundary; exceeding them writes nothing) ---
MAX_CONTENT_BYTES = 64 * 1024  # UTF-8 bytes of one entry's content (413 when exceeded)
MAX_TAGS_PER_ENTRY = 32
MAX_TAG_CHARS = 64
MAX_SOURCE_CHARS = 256
MAX_EVIDENCE_REF_CHARS = 1024
MAX_QUERY_CHARS = 4096
MAX_METADATA_BYTES = 8 * 1024  # JSON-encoded edge metadata

# --- Input shapes, as patterns the published schema carries (ECMA-262 and Python `re` alike) ---
# An entry id: the engine's ids are lower-case UUIDs (normalize.check_id matches this pattern).
ID_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
# Content, additions and queries: some character that is not whitespace, and no NUL
# (writes.check_content, recall's empty-query check).
TEXT_PATTERN = r"^[^\x00]*[^\s\x00][^\x00]*$"
# A tag as sent: not blank, no control characters (normalize.normalize_tag also refuses format,
# private-use and unassigned characters, which a portable pattern cannot name without listing
# hundreds of ranges; the schema's description says so).
TAG_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"

# --- Read defaults ---
LIST_RECENT_DEFAULT_N = 20
LIST_RECENT_MAX_N = 200
GET_TAGS_DEFAULT_LIMIT = 200  # tags one getTags answers, the most used first
GET_TAGS_MAX_LIMIT = 1000
GRAPH_VIEW_DEFAULT_HOPS = 1
GRAPH_MAX_HOPS = 3
GRAPH_VIEW_MAX_NODES = 200
GRAPH_VIEW_FANOUT_PER_NODE = 50
CONNECTIONS_MAX_EDGES = 500
# listRecent, connections and graphView show each entry's content up to this many characters
# (then `truncated: true` and the full length in `contentChars`; getEntry has it all): 200
# entries of 64 KiB would otherwise be a 13 MB answer built on a node every tenant shares.
LIST_CONTENT_MAX_CHARS = 1000
# graphView shows an edge's metadata only up to this many UTF-8 bytes of its JSON (larger: left
# out, with `metadataOmitted: true` and its size in `metadataBytes`; connections has it whole).
# Its 200 nodes can hold up to 200 x 50 edges, each with 8 KiB of metadata: an 80 MB answer.
GRAPH_VIEW_EDGE_METADATA_MAX_BYTES = 256
TOP_TOPICS_N = 10
BRIEF_RECENT_N = 10
BRIEF_RECENT_WINDOW_MS = 7 * 24 * 3600 * 1000
BRIEF_RESURFACE_N = 5
BRIEF_REVALIDATE_N = 10  # open supersession hints listed, newest first
BRIEF_RESURFACE_MIN_AGE_MS = 14 * 24 * 3600 * 1000
BRIEF_PREVIEW_CHARS = 160

# --- Write defaults (caller classification, DP-MS4) ---
DEFAULT_STATUS: Final = "canonical"
DEFAULT_KIND = "semantic"
DEFAULT_IMPORTANCE = 0.0
DEFAULT_EDGE_WEIGHT = 1.0
DEFAULT_PROVENANCE: Final = "explicit"

# --- SQLite ---
DEFAULT_SYNCHRONOUS = "FULL"  # durable on acknowledge; NORMAL is an opt-in for speed
BUSY_TIMEOUT_MS = 5000

# --- Recall arguments ---
RECALL_DEFAULT_TOP_K = 10
RECALL_MAX_TOP_K = 50
RECALL_DEFAULT_HOPS = 1  # one hop: linked context without drowning the keyword hits

# --- Reads as of a moment (asOf) ---
# a moment this far ahead of the service's clock reads as now: callers' clocks drift a little
AS_OF_FUTURE_SKEW_MS = 60_000
AS_OF_MAX_CHARS = 40  # the longest RFC 3339 date-time (nine fraction digits and an offset)

# --- Staleness (contract §7): age since updated_at after which an entry needs re-confirming ---
DAY_MS = 86_400_000
STALE_AFTER_MS = {
    "durable": 365 * DAY_MS,  # definitions, decisions, names: re-check yearly
    "state": 30 * DAY_MS,  # "currently", versions, statuses: re-check monthly
    "volatile": 2 * DAY_MS,  # prices, "right now", live incidents: re-check after two days
}
STALE_TAG_PREFIX = "stale:as-of:"
# Tags the engine or its pipelines write (marks, not what an entry is about): no topic of the
# brief, and no context the tag arm groups matches by
BOOKKEEPING_TAG_PREFIXES = (
    "stale:",
    "rolled-up",
    "synthesized",
    "auto-pattern",
    "duplicate-candidate",
    "supersession-candidate",
    "contradiction-resolved",
)
STALENESS_PASS_DEFAULT_LIMIT = 1000
STALENESS_PASS_MAX_LIMIT = 100_000  # entries one pass may mark
REVALIDATE_PREVIEW_CHARS = 120

# --- Optional vector binding (minisphere/engine/vectors): the workspace_meta key recording it ---
VECTOR_BINDING_META_KEY = "vector_binding"
