"""Every number of the recall pipeline, named, with units. See docs/concepts/recall.md; the
measurements behind the chosen values are in bench/results/tuning-notes.md."""

DAY_MS = 86_400_000

# --- query text ---
MAX_QUERY_TERMS = 32  # distinct terms searched after rewriting (token cap)
COMMON_TERM_DOC_RATIO = 0.35  # a term in more than this share of entries does not discriminate
COMMON_TERM_MIN_ENTRIES = 50  # ...but only judge "common" once the workspace is this big

# --- stand-ins for query words no entry contains (engine/retrieval/respell.py) ---
RESPELL_UNKNOWN_WORDS = True
RESPELL_MIN_CHARS = 5  # shorter unknown words (initials, abbreviations) stay as they are
RESPELL_PART_MIN_CHARS = 3  # each part of a compound ("bookshelf" -> book + shelf)
RESPELL_PREFIX_MIN_CHARS = 4  # a shared prefix at least this long...
RESPELL_PREFIX_SHARE = 0.6  # ...and at least this share of the unknown word
RESPELL_PER_WORD = 2  # vocabulary terms searched for one unknown word, most frequent first

# --- keyword arm (FTS5 BM25) ---
KEYWORD_ROW_CAP = 100  # candidates taken from FTS5, best bm25 first
# A query word the stemmer folds onto a stop word ("Ines" -> "in") is searched by its letters
# among the stop word's postings (stop_folded.py); at most this many holders are read (a word in
# more entries than that weighs next to nothing anyway).
FOLDED_WORD_MAX_ROWS = 1000
KEYWORD_HEAD_MARGIN = 20  # extra head rows ranked in FTS5 alone, to survive exclusions
PROXIMITY_BOOST_WEIGHT = 0.25  # weight of the pair-proximity bm25 added to the word bm25
PROXIMITY_WINDOW_TOKENS = 5  # two consecutive query terms at most this many tokens apart
PROXIMITY_SCAN_ROWS = 1000  # best proximity matches read to find the word hits among them
FEEDBACK_WEIGHT = 0.1  # pseudo-relevance feedback: weight of the expansion-term bm25
FEEDBACK_DOCS = 10  # best hits the expansion terms are drawn from
FEEDBACK_TERMS = 10  # expansion terms added
FEEDBACK_MIN_HITS = 3  # no feedback from fewer hits than this
FEEDBACK_SHORTLIST = 12  # candidate terms whose document frequency is looked up
FEEDBACK_MAX_DOC_RATIO = 0.01  # expansion terms must be in at most 1% of entries...
FEEDBACK_MIN_DOC_CAP = 100  # ...or in at most 100 entries in a small workspace...
# ...and never in more than 100 (specific words; each df check reads at most this many
# postings, so its cost stays bounded)
FEEDBACK_MAX_DOC_CAP = 100
FEEDBACK_TEXT_CHARS = 2000  # expansion terms come from each hit's first 2,000 characters
# No feedback when every query word is in at most 0.2% of entries (or 3): a query of rare words
# has pinned its hits down, and skipping it saves the feedback round's document-frequency probes.
FEEDBACK_SKIP_DOC_RATIO = 0.002
FEEDBACK_SKIP_MIN_DOCS = 3

# --- graph arm ---
# Best keyword hits used as BFS seeds: with the subject factor lifting the named speaker's turns,
# the replies next to more of them are worth pulling in (the BFS stops at GRAPH_MAX_NODES).
GRAPH_SEED_COUNT = 20
# The vector binding's auto-links (relates_to edges drawn at capture from a cosine, engine/
# vectors/semantic.py) are not followed: they are the dense arm's view of the data entering the
# lexical ranking by the back door, where the hybrid's agreement rule cannot hold it back.
# Without them a query the hybrid leaves to the lexical arm ranks exactly as with no binding.
# Explicit edges of any provenance, and auto-links in connections and graphView, are unaffected.
GRAPH_FOLLOWS_AUTO_LINKS = False
GRAPH_FANOUT_PER_NODE = 8  # strongest edges followed per node
GRAPH_MAX_NODES = 50  # nodes visited in total, seeds included
GRAPH_HOP_DECAY = 0.6  # score = seed score × 0.6^hop × edge weight
# Support over several paths adds up, to half the best seed's score: with GRAPH_FUSION_WEIGHT
# (1/0.6) a node found by the graph alone reaches at most 0.83 of the best keyword hit, so a
# hub linked to many matches never outranks the best match itself.
GRAPH_SUPPORT_MAX = 0.5

# --- tag arm (engine/retrieval/tag_support.py) ---
# lexical(d) += TAG_SUPPORT_WEIGHT × tag(d): tag(d) in (0, 1] is how many of the query's keyword
# matches sit under d's tag (a session, a project), relative to the tag holding the most. At 0.2
# a context full of matches lifts its entries over lone matches of about the same score, and
# never over a clearly better match elsewhere. With a binding it is part of the lexical score
# the hybrid mixes with the cosine.
TAG_SUPPORT_WEIGHT = 0.2

# --- fusion (engine/retrieval/fusion.py) ---
RRF_K = 60  # the recency list (no searchable words): 1 / (60 + rank)
# lexical(d) = keyword / best keyword + GRAPH_FUSION_WEIGHT × graph support. 1 / 0.6: the first
# hop's decay is undone, so a neighbour over an edge of weight w counts w × its seed's score;
# a much larger weight lets neighbours crowd out the matching turns.
GRAPH_FUSION_WEIGHT = 1.0 / 0.6

# --- rerank: each factor is a bounded multiplier, 1.0 = neutral ---
HALF_LIFE_MS = {"durable": 365 * DAY_MS, "state": 30 * DAY_MS, "volatile": 3 * DAY_MS}
DECAY_FLOOR = {"durable": 0.9, "state": 0.6, "volatile": 0.15}
RECALL_BOOST_MAX = 0.05  # × (1 + 0.05 × min(1, log1p(recall_count)))
IMPORTANCE_BOOST_MAX = 0.2  # × (1 + 0.2 × importance), importance in [0, 1]
TAG_OVERLAP_BOOST_MAX = 0.15  # × (1 + 0.15 × share of query terms naming one of its tags)
ROLLED_UP_FACTOR = 0.4  # entries tagged rolled-up are summaries' sources
# × SUPERSEDED_FACTOR for an entry a live entry replaces (`supersedes`): it still answers (as
# history, naming its replacement) but below comparable current facts. When its replacement is
# a candidate too, it is held at SUPERSEDED_BELOW_SHARE of the replacement's score at most.
SUPERSEDED_FACTOR = 0.5
SUPERSEDED_BELOW_SHARE = 0.99
# × (1 + SUBJECT_BOOST_MAX) when the entry's first word is a query word that distillation dropped
# as too common to search (stop words aside): an entry that starts with a name is by or about it
# (a conversation turn's speaker, a note's subject). "What did Caroline research?" searches
# "research" alone ("caroline" is in half the turns); this puts Caroline's own turns before
# Melanie's. Not above 2: a larger factor acts as a filter, and a turn by the other speaker about
# the named one must still be able to rank. Only dropped words count: a first word the query
# searches anyway is counted already (an abstract that opens with its title would count twice).
SUBJECT_BOOST_MAX = 2.0
# × NAME_MISSING_FACTOR for an entry that does not contain any of the names the query searches
# for (its capitalised words past the first, query_text.query_names): "Where does Wanda work now?"
# is rarely answered by "Quentin has been working for Evergreen Health", which matches its other
# word. Mild: a name the entry refers to otherwise ("she", a nickname) must still rank.
NAME_MISSING_FACTOR = 0.8
# × min(1, chars / BREVITY_FULL_CHARS) ^ BREVITY_EXPONENT, chars = the entry's length: an entry
# shorter than BREVITY_FULL_CHARS matches on the few words it has, so a match says less about it
# ("Bob: Hey Ann, good to see you!" matches a question about Ann as well as the turn that answers
# it, and with the subject factor it outranks that turn). It discounts the lexical part of the
# fused score only (with a binding, the cosine's part is left alone: a cosine weighs the whole
# entry, and a short turn that answers must not lose to a long one near the question); 0 turns
# it off; it only lowers a score (the rerank's pruning bound is unaffected), and not at all
# where the query has no searchable words (browsing by recency). The cutoff stays below the
# length of a typical passage, so it discounts short turns, not documents.
BREVITY_FULL_CHARS = 200
BREVITY_EXPONENT = 0.5
# Only episodes (conversation turns, events) are discounted: a greeting is short because it says
# little, a fact is short because it is one fact ("Ines lives in Turin."). Discounting facts
# ranked a person's longer statement of another attribute, or a longer statement of another
# subject, above the short fact asked about.
BREVITY_KINDS = frozenset({"episodic"})
# The first word (subject factor) and the length up to BREVITY_FULL_CHARS (brevity factor) are
# read from this much of the content, never more: the rerank's cost does not follow entry size.
# Read once, into the arms' SQL: it must stay at least any BREVITY_FULL_CHARS bench/folds.py tries.
RERANK_PREFIX_CHARS = 400

# --- MMR diversity ---
MMR_LAMBDA = 0.7
MMR_POOL_FACTOR = 3  # MMR chooses topK out of the best topK × 3 candidates
# shingles from each candidate's first 2,000 characters: the cost stays flat however long
# entries get (64 KiB allowed)
MMR_TEXT_CHARS = 2000
# Similarity below half of the word pairs shared counts as 0, above it is rescaled to [0, 1]:
# MMR pushes down restatements and copies, not entries that share a topic (relevance in the
# head is tight enough that even a small overlap would reorder it).
MMR_SIMILARITY_FLOOR = 0.5

# --- snippet budget (characters) ---
SNIPPET_TOP_CHARS = 4000
SNIPPET_TOP_COUNT = 2
SNIPPET_TAIL_CHARS = 400
SNIPPET_TOTAL_CHARS = 12000

# --- vector arm (only with the optional vector binding; see minisphere/engine/vectors/arm.py) ---
VECTOR_ROW_CAP = 100  # nearest neighbours taken from sqlite-vec, best cosine first
VECTOR_OVERFETCH = 2  # KNN depth multiplier before dropping always-on exclusions
VECTOR_MIN_COSINE = 0.0  # neighbours at or below orthogonal say nothing: dropped
# One feedback round (Rocchio): query' = query + 0.5 × mean vector of the first fused page,
# then the KNN again. Uses both arms' agreement (the fused head, not the dense head alone); it is
# what lifts the hybrid above dense-only on the passage sets.
VECTOR_FEEDBACK_DOCS = 10
VECTOR_FEEDBACK_WEIGHT = 0.5

# --- hybrid fusion: fused = a × lexical / best lexical + (1 - a) × cosine -----------------------
# The lexical share `a` follows how sharply the lexical head stands out, margin = 1 - 10th / 1st:
# a = clip(1.5 × (margin - 1/3), 0, 0.6). No fixed weight serves every kind of data: the dense
# arm leads on passages and trails far on conversations, and a fixed lexical share that helps
# conversations costs the passages.
HYBRID_MARGIN_DEPTH = 10  # margin compares the best lexical score with the 10th
HYBRID_LEXICAL_MARGIN_FLOOR = 1 / 3  # at or below this margin the lexical arm has no say
HYBRID_LEXICAL_SLOPE = 1.5  # lexical share gained per unit of margin above the floor
HYBRID_LEXICAL_MAX = 0.6  # the dense arm always keeps 40% (it breaks lexical ties)

# --- hybrid: the arms' agreement ---------------------------------------------------------------
# support = mean of lexical(d) / best lexical over the vector arm's 20 best hits. Where the
# lexical arm barely backs the dense head, the dense arm is off the query's topic and the lexical
# order is left alone (share 1, no feedback KNN); from HYBRID_AGREEMENT_HIGH the margin rule
# above decides alone. Why: with the margin rule alone the hybrid loses to zero bindings on
# unseen conversations. Support at depth 20 is what best separates conversations from passages.
# Lower bounds let the dense arm reorder more conversations; higher ones cost the passage sets.
HYBRID_AGREEMENT_DEPTH = 20
HYBRID_AGREEMENT_LOW = 0.25
HYBRID_AGREEMENT_HIGH = 0.35
# Between LOW and HIGH the dense arm is trusted only where its own head stands out: dense margin
# = 1 - (20th best cosine) / best (fusion.dense_margin) at least HYBRID_DENSE_MARGIN_TRUSTED,
# else the floor stays 1. A flat dense head with middling lexical backing is a cluster of
# chit-chat turns near any question, not an answer the words missed. The dense margin alone
# does not tell the kinds of data apart; inside the band it does. LOW and the trusted margin are
# chosen together (bench/folds.py), among the pairs that keep both passage sets at or above
# their better arm: stricter pairs gain on conversations and cost the passages.
HYBRID_DENSE_MARGIN_TRUSTED = 0.3

# --- hybrid: a query that names the workspace's subject ------------------------------------------
# A query naming a word in more than COMMON_TERM_DOC_RATIO of the entries (distill drops it from
# the search; query_text.subject_terms: a conversation's speaker, a project's name in a project
# log) keeps the lexical order whatever the arms' agreement; the dense arm has its say on the
# page only (dense_page.py). The subject factor (rerank) puts the named subject's own entries
# first; a cosine cannot: one name weighs little in a sentence vector, and both speakers of a
# conversation talk about the same things. Where fusion gave the dense arm a say on such a
# question it lost to the lexical order. It is the query's own relation to this workspace, not a
# weight fitted to a data set: passage queries name no such word and are unaffected.
HYBRID_SUBJECT_LEXICAL_LED = True

# --- hybrid: the dense arm's say where fusion left the lexical order alone (dense_page.py) -------
# On conversations the agreement floor above leaves most questions in lexical order. One bounded
# move after rerank, only where the lexical share came out at HYBRID_LEXICAL_LED_SHARE or more:
# the MMR pool re-scored by final / best final + HYBRID_PAGE_COSINE_WEIGHT × cosine (exact, from
# the pool's stored vectors). The passage sets barely see it: there the fusion gives the dense
# arm its say, so the lexical share stays below 1. A lower gate would reach pages the dense arm
# had a say in already.
HYBRID_LEXICAL_LED_SHARE = 1.0
HYBRID_PAGE_COSINE_WEIGHT = 0.75
