"""Every number of the recall pipeline, named, with units. See README "How recall ranks"."""

DAY_MS = 86_400_000

# --- query text ---
MAX_QUERY_TERMS = 32               # distinct terms searched after rewriting (token cap)
COMMON_TERM_DOC_RATIO = 0.35       # a term in more than this share of entries does not discriminate
COMMON_TERM_MIN_ENTRIES = 50       # ...but only judge "common" once the workspace is this big

# --- keyword arm (FTS5 BM25) ---
KEYWORD_ROW_CAP = 100              # candidates taken from FTS5, best bm25 first
PROXIMITY_BOOST_WEIGHT = 0.25      # weight of the pair-proximity bm25 added to the word bm25
PROXIMITY_WINDOW_TOKENS = 5        # two consecutive query terms at most this many tokens apart
FEEDBACK_WEIGHT = 0.1              # pseudo-relevance feedback: weight of the expansion-term bm25
FEEDBACK_DOCS = 10                 # best hits the expansion terms are drawn from
FEEDBACK_TERMS = 10                # expansion terms added
FEEDBACK_MIN_HITS = 3              # no feedback from fewer hits than this
FEEDBACK_SHORTLIST = 12            # candidate terms whose document frequency is looked up
FEEDBACK_MAX_DOC_RATIO = 0.01      # expansion terms must be in at most 1% of entries...
FEEDBACK_MIN_DOC_CAP = 100         # ...or in at most 100 entries in a small workspace...
FEEDBACK_MAX_DOC_CAP = 300         # ...and never in more than 300 (specific words; bounds the cost)

# --- graph arm ---
GRAPH_SEED_COUNT = 10              # best keyword hits used as BFS seeds
GRAPH_FANOUT_PER_NODE = 8          # strongest edges followed per node
GRAPH_MAX_NODES = 50               # nodes visited in total, seeds included
GRAPH_HOP_DECAY = 0.6              # score = seed score × 0.6^hop × edge weight

# --- fusion (reciprocal rank) ---
RRF_K = 60                         # 1 / (60 + rank), rank starting at 1
ARM_WEIGHTS = {"keyword": 1.0, "graph": 1.0, "recency": 1.0, "vector": 1.0}

# --- rerank: each factor is a bounded multiplier, 1.0 = neutral ---
HALF_LIFE_MS = {"durable": 365 * DAY_MS, "state": 30 * DAY_MS, "volatile": 3 * DAY_MS}
DECAY_FLOOR = {"durable": 0.9, "state": 0.6, "volatile": 0.15}
RECALL_BOOST_MAX = 0.05            # × (1 + 0.05 × min(1, log1p(recall_count)))
IMPORTANCE_BOOST_MAX = 0.2         # × (1 + 0.2 × importance), importance in [0, 1]
TAG_OVERLAP_BOOST_MAX = 0.15       # × (1 + 0.15 × share of query terms naming one of its tags)
ROLLED_UP_FACTOR = 0.4             # entries tagged rolled-up are summaries' sources

# --- MMR diversity ---
MMR_LAMBDA = 0.7
MMR_POOL_FACTOR = 3                # MMR chooses topK out of the best topK × 3 candidates

# --- snippet budget (characters) ---
SNIPPET_TOP_CHARS = 4000
SNIPPET_TOP_COUNT = 2
SNIPPET_TAIL_CHARS = 400
SNIPPET_TOTAL_CHARS = 12000

# --- vector arm (only with the optional vector binding; see minisphere/vectors/arm.py) ---
VECTOR_ROW_CAP = 100               # nearest neighbours taken from sqlite-vec, best cosine first
VECTOR_OVERFETCH = 2               # KNN depth multiplier before dropping always-on exclusions
VECTOR_MIN_COSINE = 0.0            # neighbours at or below orthogonal say nothing: dropped

# --- hybrid fusion: the same weighted RRF, with these weights when the vector arm ran ---
# The dense arm leads; lexical evidence reorders within about one result page of its head. An
# entry that is the keyword arm's rank 1 (plus its hop-0 graph echo: 2/61 in all) at dense rank
# 11 ties the dense rank 1 (15/71 + 2/61 ≈ 15/61); entries the dense arm ranks far down cannot
# be pulled up by keywords alone. Equal-weight RRF lets the weaker arm drag the stronger one down
# (data README: 0.692 / 0.444 versus dense-only 0.704 / 0.478). One weight for every workspace;
# bench/results/retrieval-vectors.md has the sensitivity. ARM_WEIGHTS stays the zero-binding fusion.
HYBRID_ARM_WEIGHTS = {"keyword": 1.0, "graph": 1.0, "recency": 1.0, "vector": 15.0}
