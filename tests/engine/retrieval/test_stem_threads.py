"""The query-text stemmer under reader threads: a recall runs on any of the workspace's reader
threads, so stems computed at the same moment by several of them must be the stems one thread
computes alone (a wrong stem would be cached for the process's life)."""

from __future__ import annotations

import gc
import sys
import threading
from contextlib import contextmanager

import snowballstemmer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from snowballstemmer.basestemmer import BaseStemmer

from minisphere.engine.retrieval import query_text
from minisphere.hosting.tenant_caches import clear_tenant_caches

THREADS = 8
ROUNDS = 6
WORDS = st.lists(
    st.text(st.sampled_from("abcdefghilmnoprstuvyz"), min_size=3, max_size=14),
    min_size=40,
    max_size=120,
    unique=True,
)


@contextmanager
def frequent_thread_switches():
    """Threads handed the interpreter every microsecond: the interleavings a loaded reader pool
    meets now and then happen in every run."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def stems_in_threads(words: list[str]) -> list[dict[str, str]]:
    """Each thread's stems of `words` (in its own order), the cache emptied before each round
    so every word goes through the stemmer while the others are in it too."""
    results: list[dict[str, str]] = [{} for _ in range(THREADS)]
    errors: list[Exception] = []
    start = threading.Barrier(THREADS)

    def stem_all(index: int) -> None:
        order = words[index:] + words[:index]
        try:
            start.wait()
            for word in order:
                results[index][word] = query_text.stem(word)
        except Exception as exc:  # noqa: BLE001 - an IndexError from the stemmer is reported
            errors.append(exc)

    threads = [threading.Thread(target=stem_all, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    return results


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=WORDS)
def test_stems_from_concurrent_threads_are_the_stems_of_one_thread(words):
    alone = snowballstemmer.stemmer("porter")
    expected = {word: alone.stemWord(word) for word in words}
    with frequent_thread_switches():
        for _ in range(ROUNDS):
            clear_tenant_caches()
            for stems in stems_in_threads(words):
                assert stems == expected
    clear_tenant_caches()


def test_no_stemmer_keeps_the_last_word_it_stemmed():
    """A process handed to the next tenant must not hold the last tenant's words: the stem
    cache is emptied with the tenant caches, and no stemmer object keeps its last word."""
    word = "confidentialities"
    query_text.stem(word)
    clear_tenant_caches()
    # by type, not isinstance: a dead weak proxy among the objects raises on isinstance
    stemmers = [obj for obj in gc.get_objects() if issubclass(type(obj), BaseStemmer)]
    assert stemmers
    assert not [s for s in stemmers if word[:8] in s.get_current()]
    assert query_text._porter.cache_info().currsize == 0
