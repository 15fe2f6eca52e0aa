"""From user text to a safe FTS5 query.

User text never reaches FTS5 syntax: it is split into plain word tokens (letters and digits
only), each token is double-quoted, and tokens are OR-ed. Quotes, `*`, `^`, `NEAR`, AND/OR/NOT,
`column:` filters, parentheses and control characters therefore all search as plain words or
vanish as separators.

Rare-term distillation drops English stop words and terms that occur in so many entries of this
workspace that they cannot discriminate — unless that would leave nothing to search.
"""

from __future__ import annotations

import itertools
import re
import threading
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import snowballstemmer

from minisphere.engine.retrieval import tuning as T

if TYPE_CHECKING:  # pragma: no cover - types only
    from minisphere.engine.db import Connection

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_CALENDAR_WORDS = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april may "
    "june july august september october november december".split()
)
_CAPITALISED = re.compile(r"[^\W\d_]\w*", re.UNICODE)  # a word, its first character a letter

STOP_WORDS = frozenset(
    """
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not now of off on once only or other our ours ourselves out over own same she
should so some such than that the their theirs them themselves then there these they this those
through to too under until up very was we were what when where which while who whom why will with
would you your yours yourself yourselves also may might must shall us let get got ever else etc
tell know think please anything something thing things one ones
s t d ll re ve m
happen happened happens happening
""".split()
)

# A snowball stemmer keeps the word it works on in its own fields, so one object shared by the
# reader threads mixes their words up: each thread has its own (cheaper than a lock around one).
_thread_stemmers = threading.local()


def fold(text: str) -> str:
    """Lower-case and strip diacritics, like FTS5's unicode61 remove_diacritics tokenizer."""
    text = text.lower()
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(fold(text))


def _stemmer() -> Any:  # snowballstemmer has no type information
    stemmer = getattr(_thread_stemmers, "stemmer", None)
    if stemmer is None:
        stemmer = _thread_stemmers.stemmer = snowballstemmer.stemmer("porter")
    return stemmer


@lru_cache(maxsize=65536)
def _porter(token: str) -> str:
    stemmer = _stemmer()
    stemmed: str = stemmer.stemWord(token)
    # the cache is emptied between tenants; the stemmer must not keep the last word either
    stemmer.set_current("")
    return stemmed


def stem(token: str) -> str:
    # Every Porter suffix ends in a letter: a token ending in a digit (ids, years, versions)
    # stays as it is, without a call into the pure-Python stemmer (and without a cache entry:
    # such tokens are mostly unique)
    if not token.isascii() or token[-1:].isdigit():
        return token
    return _porter(token)


def stop_folded(tokens: Iterable[str]) -> list[str]:
    """The tokens the stemmer folds onto a stop word, not stop words themselves ("ines" -> "in",
    "wes" -> "we", but also "using" -> "us"): the index cannot tell them from the stop word."""
    return [t for t in tokens if t not in STOP_WORDS and stem(t) in STOP_WORDS]


def folded_names(query: str) -> frozenset[str]:
    """The query's names (query_names: capitalised words past its first) that the stemmer folds
    onto a stop word: "Where does Ines work now?" -> ines. Only names: an ordinary word folded so
    ("using", "getting") is better searched by its stem, which finds its other forms too, and a
    name has none."""
    return frozenset(stop_folded(query_names(query, tokenize(query))))


def content_terms(text: str) -> list[str]:
    """Stemmed, stop-word-free terms of a text (for overlap and similarity measures)."""
    return [stem(t) for t in tokenize(text) if t not in STOP_WORDS]


def plain_terms(text: str) -> list[str]:
    """Stop-word-free words of a text, not stemmed: enough to see a copy, and cheap."""
    return [t for t in tokenize(text) if t not in STOP_WORDS]


def distill(
    conn: Connection,
    tokens: list[str],
    entry_count: int,
    frequencies: dict[str, int] | None = None,
    folded: frozenset[str] = frozenset(),
) -> tuple[list[str], list[str]]:
    """Split query tokens into (kept, dropped). Order of first appearance is kept.
    `frequencies`, if given, receives the document frequency of each non-stop token looked up
    (nothing in a workspace too small to judge). `folded`: names the stemmer folds onto a stop
    word (folded_names), whose count in the index is the stop word's, not theirs: they are kept,
    uncounted (they are searched by their letters)."""
    unique = list(dict.fromkeys(tokens))[: T.MAX_QUERY_TERMS]
    kept = [t for t in unique if t not in STOP_WORDS]
    judged = [t for t in kept if t not in folded]
    if entry_count >= T.COMMON_TERM_MIN_ENTRIES and judged:
        frequency = document_frequency(conn, [stem(t) for t in judged])
        if frequencies is not None:
            frequencies.update((t, frequency.get(stem(t), 0)) for t in judged)
        limit = T.COMMON_TERM_DOC_RATIO * entry_count
        rare = [t for t in kept if t in folded or frequency.get(stem(t), 0) <= limit]
        kept = rare or kept
    if not kept:  # only stop words: search them rather than nothing
        kept = unique
    dropped = [t for t in unique if t not in kept]
    return kept, dropped


def document_frequency(conn: Connection, stems: list[str]) -> dict[str, int]:
    marks = ",".join("?" * len(stems))
    return dict(
        conn.execute(
            f"SELECT term, doc FROM entries_fts_vocab WHERE term IN ({marks})", stems
        ).fetchall()
    )


def first_term(text: str) -> str:
    """The stem of a text's first word: who speaks in a conversation turn ("Caroline: ..."),
    what a note or an abstract is about ("Postgres upgrade: ...", "Sweden is ...")."""
    match = _TOKEN.search(fold(text))
    return stem(match.group(0)) if match else ""


def query_names(query: str, searched: Iterable[str]) -> frozenset[str]:
    """The names a query searches for: its capitalised words past the first ("Where does Wanda
    work now?" -> wanda), folded, that are among its searched words (`searched`: not a time
    phrase's "March", nor a name too common to search, which the subject factor weighs). Days
    and months are capitalised by convention, not because they name what is asked about."""
    words = _CAPITALISED.findall(query)
    names = {fold(w) for w in words[1:] if w[0].isupper()}
    return frozenset(names.intersection(searched) - _CALENDAR_WORDS)


def subject_terms(dropped: list[str]) -> frozenset[str]:
    """Stems of the words distillation dropped as too common to search (stop words aside): a
    name in half the entries is no search term, yet an entry that starts with it is by or about
    it (the subject factor, rerank.py). Words the query searches already are left out: boosting
    them again double-counts them, most of all in entries that open with their title."""
    return frozenset(stem(t) for t in dropped if t not in STOP_WORDS)


def quote(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def match_any(tokens: list[str]) -> str:
    """FTS5 expression matching any of the tokens, each as a plain string."""
    return " OR ".join(quote(t) for t in tokens)


def match_near_pairs(tokens: list[str], window_tokens: int) -> str | None:
    """FTS5 expression matching any two consecutive query tokens found close together."""
    pairs = [f"NEAR({quote(a)} {quote(b)}, {window_tokens})" for a, b in itertools.pairwise(tokens)]
    return " OR ".join(pairs) if pairs else None
