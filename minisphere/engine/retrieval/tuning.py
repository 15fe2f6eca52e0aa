"""Every number of the recall pipeline, named, with units. See docs/concepts/recall.md."""

DAY_MS = 86_400_000

# --- query text ---
MAX_QUERY_TERMS = 32               # distinct terms searched after rewriting (token cap)
COMMON_TERM_DOC_RATIO = 0.35       # a term in more than this share of entries does not discriminate
COMMON_TERM_MIN_ENTRIES = 50       # ...but only judge "common" once the workspace is this big

# --- keyword arm (FTS5 BM25) ---
KEYWORD_ROW_CAP = 100              # candidates taken from FTS5, best bm25 first
KEYWORD_HEAD_MARGIN = 20           # extra head rows ranked in FTS5 alone, to survive exclusions
PROXIMITY_BOOST_WEIGHT = 0.25      # weight of the pair-proximity bm25 added to the word bm25
PROXIMITY_WINDOW_TOKENS = 5        # two consecutive query terms at most this many tokens apart
PROXIMITY_SCAN_ROWS = 1000         # best proximity matches read to find the word hits among them
FEEDBACK_WEIGHT = 0.1              # pseudo-relevance feedback: weight of the expansion-term bm25
FEEDBACK_DOCS = 10                 # best hits the expansion terms are drawn from
FEEDBACK_TERMS = 10                # expansion terms added
FEEDBACK_MIN_HITS = 3              # no feedback from fewer hits than this
FEEDBACK_SHORTLIST = 12            # candidate terms whose document frequency is looked up
FEEDBACK_MAX_DOC_RATIO = 0.01      # expansion terms must be in at most 1% of entries...
FEEDBACK_MIN_DOC_CAP = 100         # ...or in at most 100 entries in a small workspace...
FEEDBACK_MAX_DOC_CAP = 100         # ...and never in more than 100 (specific words; each df check
                                   # reads at most this many postings: 300 cost 0.5 ms a query at
                                   # 100k entries; the 5k dev sets never reach past 100 anyway)
FEEDBACK_TEXT_CHARS = 2000         # expansion terms come from each hit's first 2,000 characters
# No feedback when every query word is in at most 0.2% of entries (or 3): a query of rare words
# has pinned its hits down. Same nDCG@10 / R@10 on all three dev sets (46 of 865 queries skip);
# at 100k entries it saves the ten document-frequency probes of a rare-word query.
FEEDBACK_SKIP_DOC_RATIO = 0.002
FEEDBACK_SKIP_MIN_DOCS = 3

# --- graph arm ---
# Best keyword hits used as BFS seeds. 20 (was 10): with the subject factor lifting the named
# speaker's turns, the replies next to more of them are worth pulling in; leave-one-conversation-
# out chose 20 over 5 and 10 on all five folds (held-out R@10 +0.011, nDCG@10 +0.004, worst fold
# -0.002). No edges on the passage sets, and the BFS stops at GRAPH_MAX_NODES either way.
GRAPH_SEED_COUNT = 20
# The vector binding's auto-links (relates_to edges drawn at capture from a cosine, engine/
# vectors/semantic.py) are not followed: they are the dense arm's view of the data entering the
# lexical ranking by the back door, where the hybrid's agreement rule cannot hold it back. On the
# dev conversations they moved the ranking even where the fusion left the lexical order alone
# (held-out conv-26 nDCG@10 -0.011, conv-49 +0.006, the others 0 to -0.002 against zero
# bindings); without them a query the hybrid leaves to the lexical arm ranks exactly as with no
# binding. Leave-one-conversation-out with the agreement floor in place: held-out Δ 0.000 R@10 /
# 0.000 nDCG@10 (worst fold -0.001), so it is kept for that property, not for a gain. Explicit edges of any
# provenance, and auto-links in connections and graphView, are unaffected.
GRAPH_FOLLOWS_AUTO_LINKS = False
GRAPH_FANOUT_PER_NODE = 8          # strongest edges followed per node
GRAPH_MAX_NODES = 50               # nodes visited in total, seeds included
GRAPH_HOP_DECAY = 0.6              # score = seed score × 0.6^hop × edge weight
# Support over several paths adds up, to half the best seed's score: with GRAPH_FUSION_WEIGHT
# (1/0.6) a node found by the graph alone reaches at most 0.83 of the best keyword hit, so a
# hub linked to many matches never outranks the best match itself (at 1.0 it reached 1.67:
# the console showed hubs above an exact match). Conversations (locomo_dev, zero bindings,
# nDCG@10 / R@10): cap 1.0 0.4926 / 0.6876, 0.6 0.4925 / 0.6876, 0.5 0.4932 / 0.6889, 0.4
# 0.4933 / 0.6886; no edges on the passage sets.
GRAPH_SUPPORT_MAX = 0.5

# --- fusion (engine/retrieval/fusion.py; measured in bench/results/retrieval.md) ---
RRF_K = 60                         # the recency list (no searchable words): 1 / (60 + rank)
# lexical(d) = keyword / best keyword + GRAPH_FUSION_WEIGHT × graph support. 1 / 0.6: the first
# hop's decay is undone, so a neighbour over an edge of weight w counts w × its seed's score.
# Conversations (locomo_dev, zero bindings, nDCG@10 / R@10): reciprocal rank 0.448 / 0.620;
# support weight 1.0: 0.482 / 0.649; 1/0.6: 0.490 / 0.668 (max instead of sum: 0.497 / 0.676);
# 2.5: worse again (neighbours crowd out the matching turns). No edges: no effect.
GRAPH_FUSION_WEIGHT = 1.0 / 0.6

# --- rerank: each factor is a bounded multiplier, 1.0 = neutral ---
HALF_LIFE_MS = {"durable": 365 * DAY_MS, "state": 30 * DAY_MS, "volatile": 3 * DAY_MS}
DECAY_FLOOR = {"durable": 0.9, "state": 0.6, "volatile": 0.15}
RECALL_BOOST_MAX = 0.05            # × (1 + 0.05 × min(1, log1p(recall_count)))
IMPORTANCE_BOOST_MAX = 0.2         # × (1 + 0.2 × importance), importance in [0, 1]
TAG_OVERLAP_BOOST_MAX = 0.15       # × (1 + 0.15 × share of query terms naming one of its tags)
ROLLED_UP_FACTOR = 0.4             # entries tagged rolled-up are summaries' sources
# × (1 + SUBJECT_BOOST_MAX) when the entry's first word is a query word that distillation dropped
# as too common to search (stop words aside): an entry that starts with a name is by or about it
# (a conversation turn's speaker, a note's subject). "What did Caroline research?" searches
# "research" alone ("caroline" is in half the turns); this puts Caroline's own turns before
# Melanie's. Leave-one-conversation-out (bench/folds.py) chose 2 on all five folds among 0.5, 1
# and 2: held-out fold mean R@10 0.688 -> 0.730, nDCG@10 0.492 -> 0.561 (multi-hop 0.389 ->
# 0.476); the passage sets have no such dropped words and are unchanged. Not above 2: by then it
# acts as a filter (1 -> 2 gained 0.006 R@10), and a turn by the other speaker about the named
# one must still be able to rank. Boosting first words the query searches anyway cost the
# passage sets 0.04 nDCG@10 (DBpedia's abstracts start with their title).
SUBJECT_BOOST_MAX = 2.0
# × min(1, chars / BREVITY_FULL_CHARS) ^ BREVITY_EXPONENT, chars = the entry's length: an entry
# shorter than BREVITY_FULL_CHARS matches on the few words it has, so a match says less about it
# ("Bob: Hey Ann, good to see you!" matches a question about Ann as well as the turn that answers
# it, and with the subject factor it outranks that turn). It discounts the lexical part of the
# fused score only (with a binding, the cosine's part is left alone: a cosine weighs the whole
# entry); 0 turns it off; it only lowers a score (the rerank's pruning bound is unaffected), and
# not at all where the query has no searchable words (browsing by recency).
# Leave-one-conversation-out (bench/folds.py) chose 200 over 100 on all five folds: zero-binding
# held-out fold mean R@10 0.738 -> 0.749, nDCG@10 0.564 -> 0.580, every fold up, open-domain
# 0.350 -> 0.374, no category lower; with the MiniLM binding 0.752 -> 0.760 / 0.572 -> 0.587.
# 300 (chosen by three folds when offered) reaches past a third of the passages (MS MARCO's
# median is 311 characters): MS MARCO nDCG@10 0.638 -> 0.626; at 200 the passage sets are level
# (0.6378 -> 0.6376, DBpedia 0.3564 -> 0.3571; hybrid 0.7044 -> 0.7047, 0.4979 -> 0.4988). Offered
# exponents 0.25 and 1 (linear) too, no fold chose 1 and one chose 0.25. Discounting the whole
# fused score, cosine part included, gained the hybrid more on the mean (nDCG@10 0.593 against
# 0.587) but put conv-26 0.016 R@10 below zero-binding (0.006 with the lexical part alone): short
# turns that answer lost to long ones near the question where the dense arm led.
BREVITY_FULL_CHARS = 200
BREVITY_EXPONENT = 0.5
# The first word (subject factor) and the length up to BREVITY_FULL_CHARS (brevity factor) are
# read from this much of the content, never more: the rerank's cost does not follow entry size.
# Read once, into the arms' SQL: it must stay at least the longest BREVITY_FULL_CHARS tried.
RERANK_PREFIX_CHARS = 400

# --- MMR diversity ---
MMR_LAMBDA = 0.7
MMR_POOL_FACTOR = 3                # MMR chooses topK out of the best topK × 3 candidates
MMR_TEXT_CHARS = 2000              # shingles from each candidate's first 2,000 characters: the
                                   # cost stays flat however long entries get (64 KiB allowed)
# Similarity below half of the word pairs shared counts as 0, above it is rescaled to [0, 1]:
# MMR pushes down restatements and copies, not entries that share a topic. With the scored
# fusion, relevance in the head is tight enough that even a 0.05 overlap reordered it: MS MARCO
# zero-binding 0.632 nDCG@10 with no floor, 0.638 with 0.5, 0.643 without MMR (the rest is
# near-copies of one passage that the judgments count twice); hybrid 0.707 / 0.714 / 0.714;
# conversations 0.492 / 0.493 / 0.493.
MMR_SIMILARITY_FLOOR = 0.5

# --- snippet budget (characters) ---
SNIPPET_TOP_CHARS = 4000
SNIPPET_TOP_COUNT = 2
SNIPPET_TAIL_CHARS = 400
SNIPPET_TOTAL_CHARS = 12000

# --- vector arm (only with the optional vector binding; see minisphere/engine/vectors/arm.py) ---
VECTOR_ROW_CAP = 100               # nearest neighbours taken from sqlite-vec, best cosine first
VECTOR_OVERFETCH = 2               # KNN depth multiplier before dropping always-on exclusions
VECTOR_MIN_COSINE = 0.0            # neighbours at or below orthogonal say nothing: dropped
# One feedback round (Rocchio): query' = query + 0.5 × mean vector of the first fused page,
# then the KNN again. Uses both arms' agreement (the fused head, not the dense head alone); it is
# what lifts the hybrid above dense-only on the passage sets (simulated, same run: MS MARCO
# 0.700 -> 0.714, DBpedia 0.485 -> 0.498 nDCG@10; conversations 0.510 -> 0.504).
VECTOR_FEEDBACK_DOCS = 10
VECTOR_FEEDBACK_WEIGHT = 0.5

# --- hybrid fusion: fused = a × lexical / best lexical + (1 - a) × cosine -----------------------
# The lexical share `a` follows how sharply the lexical head stands out, margin = 1 - 10th / 1st:
# a = clip(1.5 × (margin - 1/3), 0, 0.6). No fixed weight served all three dev sets: the dense
# arm leads on MS MARCO and DBpedia (0.704 / 0.478 vs keyword 0.643 / 0.356) and trails far on
# conversations (0.330 vs 0.470), and any fixed lexical share that helped conversations cost
# DBpedia (convex, fixed share 0.3: 0.702 / 0.459 / 0.522). Mean margin on the dev sets: MS MARCO
# 0.40, DBpedia 0.33, conversations 0.64. Sensitivity in bench/results/retrieval-vectors.md.
HYBRID_MARGIN_DEPTH = 10           # margin compares the best lexical score with the 10th
HYBRID_LEXICAL_MARGIN_FLOOR = 1 / 3  # at or below this margin the lexical arm has no say
HYBRID_LEXICAL_SLOPE = 1.5         # lexical share gained per unit of margin above the floor
HYBRID_LEXICAL_MAX = 0.6           # the dense arm always keeps 40% (it breaks lexical ties)

# --- hybrid: the arms' agreement ---------------------------------------------------------------
# support = mean of lexical(d) / best lexical over the vector arm's 20 best hits. Where the
# lexical arm barely backs the dense head, the dense arm is off the query's topic and the lexical
# order is left alone (share 1, no feedback KNN); from HYBRID_AGREEMENT_HIGH the margin rule
# above decides alone. Why: with the margin rule alone the hybrid lost to zero-binding on unseen
# conversations (R@10 0.650 vs 0.675) and, once the subject factor lifted zero-binding, on the
# dev folds too (R@10 0.7264 vs 0.7310). Support at depth 20 separates the kinds of data best
# (10% / 50% / 90% quantiles: LoCoMo dev 0.05 / 0.16 / 0.30, MS MARCO 0.36 / 0.62 / 0.76,
# DBpedia 0.42 / 0.56 / 0.75; depth 10: 0.42 on conversations against 0.39 on MS MARCO).
# Leave-one-conversation-out chose (0.2, 0.35) on all five folds among (0.15, 0.3), (0.2, 0.35),
# (0.25, 0.4), (0.3, 0.3) (10 graph seeds then: hybrid R@10 0.7373 vs zero-binding 0.7310); with
# 20 seeds no other pair improves the held-out mean. Lower bounds let the dense arm reorder more
# conversations (two folds -0.006 to -0.014 R@10); higher ones cost MS MARCO (0.6976 at
# (0.25, 0.4) vs dense-only 0.7043). It does not make the dense arm help on conversations: it
# leaves most of them (support under 0.2) in lexical order, where the page step below takes over.
# With that step in place (and every question asked of the same state), the folds now pick
# (0.4, 0.8) on all five (held-out +0.029 R@10 / +0.023 nDCG@10 against no floor), but the
# stricter pairs cost the passage sets (measured before the page step: MS MARCO 0.678, DBpedia
# 0.417 against dense-only 0.704 / 0.478). LOW moved to 0.25 with the band rule below.
HYBRID_AGREEMENT_DEPTH = 20
HYBRID_AGREEMENT_LOW = 0.25
HYBRID_AGREEMENT_HIGH = 0.35
# Between LOW and HIGH the dense arm is trusted only where its own head stands out: dense margin
# = 1 - (20th best cosine) / best (fusion.dense_margin) at least HYBRID_DENSE_MARGIN_TRUSTED,
# else the floor stays 1. A flat dense head with middling lexical backing is a cluster of
# chit-chat turns near any question, not an answer the words missed. Dense margin, 10% / 50% /
# 90%: LoCoMo dev 0.17 / 0.26 / 0.41, MS MARCO 0.11 / 0.23 / 0.47, DBpedia 0.16 / 0.27 / 0.44;
# alone it does not tell the data sets apart, inside the band it does. The pair (LOW, trusted
# margin) was judged together, leave-one-conversation-out, among the candidates that keep both
# passage sets at or above their better arm (bench/folds.py): (0.2, 0) as before, (0.2, 0.2 |
# 0.25 | 0.3), (0.2 to 0.4 HIGH, 0), (0.25, 0 | 0.2 | 0.25 | 0.3). The folds chose (0.25, 0.3)
# on three and (0.2, 0.3) on two: held out, hybrid - zero-binding +0.011 R@10 / +0.010 nDCG@10,
# worst fold -0.003 (it was +0.010 / +0.006, worst -0.006); with the dense slots below then off,
# (0.25, 0.25 | 0.3) on all five: +0.013 / +0.011, worst -0.003 (the two margins score the same
# on the whole split; 0.3 is the value the band was first judged at). MS MARCO and DBpedia
# unchanged (0.7047 / 0.4988). Stricter pairs gain more on conversations and cost the passages:
# (0.3, 0.45) with the margin rule +0.020 / +0.012 but MS MARCO 0.686; the band without it
# (trusted margin 1, a step at HIGH) MS MARCO 0.701.
HYBRID_DENSE_MARGIN_TRUSTED = 0.3

# --- hybrid: the dense arm's say where fusion left the lexical order alone (dense_page.py) -------
# On conversations the agreement floor above leaves most questions in lexical order, and there
# the binding neither helped nor hurt (held-out hybrid - zero-binding R@10 / nDCG@10). Two bounded
# moves after rerank, only where the lexical share came out at HYBRID_LEXICAL_LED_SHARE or more:
# the MMR pool re-scored by final / best final + HYBRID_PAGE_COSINE_WEIGHT × cosine (exact, from
# the pool's stored vectors: +0.3 ms a bound recall), and the dense arm's best hits missing from
# the page in its last floor(topK × HYBRID_DENSE_TAIL_SHARE) places. Leave-one-conversation-out
# (bench/results/retrieval-vectors.md), each against 0 with the other in place: the weight chose
# 0.75 on two folds and 1 on three (held-out +0.001 R@10 / +0.005 nDCG@10, worst fold -0.004);
# the slots chose 0.1 on all five (+0.005 / +0.001, worst -0.007; two slots lost more of the
# lexical page than they brought). Together: hybrid - zero-binding +0.014 R@10 / +0.008 nDCG@10,
# every fold >= 0.000 (it was +0.001 / -0.000, worst -0.009). The passage sets barely see it: there
# the fusion gives the dense arm its say, so the lexical share stays below 1 (one MS MARCO query
# of 43 reaches 1: hybrid 0.7035 -> 0.7044, DBpedia unchanged at 0.4979). A lower gate (0.9
# or 0.8: pages the dense arm had a little say in already) was chosen on three folds but gained
# no held-out R@10 (-0.000, nDCG@10 +0.001) and cost conv-47 0.012 R@10: not kept.
# The dense slots are off since the agreement band above: with it in place, leave-one-
# conversation-out chose 0.1 on three folds and lost there (held-out -0.002 R@10 / -0.001
# nDCG@10 against none, conv-26 -0.013): the band already leaves to the lexical arm the pages
# where the dense arm's hits were chit-chat. Without them, hybrid - zero-binding, held out with
# the band chosen per fold: +0.013 / +0.011, worst fold -0.003.
HYBRID_LEXICAL_LED_SHARE = 1.0
HYBRID_PAGE_COSINE_WEIGHT = 0.75
HYBRID_DENSE_TAIL_SHARE = 0.0
