"""Stand-ins for the query words this workspace has never seen.

A word no entry contains cannot match anything: "Would she keep Dr. Seuss books on her
bookshelf?" asked of a conversation that only ever said "book" and "shelf". Where the
workspace's own vocabulary (the terms of its FTS5 index, read through fts5vocab) holds a near
form of such a word, that form is searched beside it:

1. a compound of two vocabulary words, split at the first place from the left where both parts
   occur ("bookshelf" -> book + shelf); each part at least RESPELL_PART_MIN_CHARS letters and
   neither a stop word;
2. otherwise the longest prefix of the word, at least RESPELL_PREFIX_MIN_CHARS letters and
   RESPELL_PREFIX_SHARE of the word, that starts some vocabulary terms: the RESPELL_PER_WORD
   most frequent of them ("imposter" -> impostor).

Only words of letters that no entry contains, at least RESPELL_MIN_CHARS long, and only in a
workspace large enough to judge frequencies (COMMON_TERM_MIN_ENTRIES): a word the workspace
holds is never replaced, so an exact match is never traded for a guess. Nothing is fitted: the
vocabulary is this workspace's, read at recall time. Cost per unknown word: one lookup of the
split parts' frequencies and at most a few prefix range reads of the vocabulary (B-tree seeks);
nothing for a query whose words all occur. The answer names the stand-ins (queryUsed.standIns).
"""

from __future__ import annotations

import math

from minisphere.engine.db import Connection
from minisphere.engine.retrieval import tuning as T
from minisphere.engine.retrieval.query_text import STOP_WORDS, document_frequency, stem


def _compound(conn: Connection, word: str) -> list[str]:
    """The stems of the first split of `word` into two vocabulary words, or []."""
    least = T.RESPELL_PART_MIN_CHARS
    splits = [(word[:i], word[i:]) for i in range(least, len(word) - least + 1)]
    splits = [(a, b) for a, b in splits if not {a, b, stem(a), stem(b)} & STOP_WORDS]
    if not splits:
        return []
    frequency = document_frequency(conn, sorted({stem(part) for pair in splits for part in pair}))
    for a, b in splits:
        if frequency.get(stem(a), 0) and frequency.get(stem(b), 0):
            return [stem(a), stem(b)]
    return []


def _by_prefix(conn: Connection, word: str) -> list[str]:
    """The most frequent vocabulary terms starting with the longest usable prefix of `word`."""
    shortest = max(T.RESPELL_PREFIX_MIN_CHARS, math.ceil(T.RESPELL_PREFIX_SHARE * len(word)))
    for end in range(len(word) - 1, shortest - 1, -1):
        prefix = word[:end]
        found = [
            r[0]
            for r in conn.execute(
                "SELECT term FROM entries_fts_vocab WHERE term >= ? AND term < ? "
                "ORDER BY doc DESC, term LIMIT ?",
                (prefix, prefix + "\U0010ffff", T.RESPELL_PER_WORD),
            ).fetchall()
            if r[0] not in STOP_WORDS
        ]
        if found:
            return found
    return []


def stand_ins(
    conn: Connection, terms: list[str], frequencies: dict[str, int]
) -> dict[str, list[str]]:
    """unknown query word -> the vocabulary terms searched beside it (words with a stand-in
    only). `frequencies`: distill's document counts of the query words (empty in a workspace
    too small to judge them: then nothing is unknown)."""
    found: dict[str, list[str]] = {}
    for word in terms:
        if frequencies.get(word, 1) != 0 or len(word) < T.RESPELL_MIN_CHARS or not word.isalpha():
            continue
        substitutes = _compound(conn, word) or _by_prefix(conn, word)
        if substitutes:
            found[word] = substitutes
    return found
