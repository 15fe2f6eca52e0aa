"""MinisphereStore checked against LangGraph's own InMemoryStore: a hypothesis state machine
sends the same random puts, deletes, gets, listings, searches and namespace listings to both,
over a live workspace, and every answer must agree. Where the store answers by rank (a search
with a query) the item whose words were searched must be among the results, and every result
must be an item the reference holds with the same value."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("langgraph.store.memory")

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from langgraph.store.base import GetOp, ListNamespacesOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from minisphere.integrations.langgraph import MinisphereStore
from tests.integrations.conftest import live_workspace

# labels and keys that differ only in case or spacing: tags fold case, capture folds both
NAMESPACES = [("users",), ("users", "alice"), ("users", "Alice"), ("docs", "a", "b"), ("docs", "a")]
KEYS = ["k1", "K1", "note", "a  b", "a b"]
WORDS = ["apple", "banana", "cherry"]
EVERYTHING = 1000  # a limit no listing of these runs reaches

values = st.fixed_dictionaries(
    {
        "text": st.sampled_from(WORDS),
        "code": st.integers(0, 999).map(lambda i: f"code{i}"),  # a word to search an item by
        "n": st.integers(-5, 5),
    }
)
prefixes = st.sampled_from(sorted({ns[:d] for ns in NAMESPACES for d in range(len(ns) + 1)}))
filters = st.one_of(
    st.none(),
    st.fixed_dictionaries({"text": st.sampled_from(WORDS)}),
    st.fixed_dictionaries({"n": st.sampled_from([{"$gte": 0}, {"$lt": 2}, {"$ne": 1}])}),
)


def triples(items) -> set:
    return {(tuple(i.namespace), i.key, repr(sorted(i.value.items()))) for i in items}


def namespaces_with_items(reference: InMemoryStore) -> InMemoryStore:
    """InMemoryStore lists every namespace it was ever asked about, emptied or only read;
    ours lists those holding an item. A fresh copy of the reference's items has only those."""
    fresh = InMemoryStore()
    for item in reference.search((), limit=EVERYTHING):
        fresh.put(item.namespace, item.key, item.value)
    return fresh


@contextlib.contextmanager
def in_process_workspace():
    """A handle of an empty workspace of the in-process app, closed with its folder."""
    with tempfile.TemporaryDirectory() as folder, live_workspace(Path(folder), seed=False) as live:
        yield live.ws


class StoreAgreement(RuleBasedStateMachine):
    """Each run gets an empty workspace from `empty_workspace()`, a context manager yielding a
    handle: the in-process app's here; tests/e2e overrides it with the live service's."""

    def empty_workspace(self):
        return in_process_workspace()

    @initialize()
    def open_stores(self):
        self._workspace = contextlib.ExitStack()
        self.ours = MinisphereStore(self._workspace.enter_context(self.empty_workspace()))
        self.reference = InMemoryStore()

    def teardown(self):
        if hasattr(self, "_workspace"):
            self._workspace.close()

    @rule(namespace=st.sampled_from(NAMESPACES), key=st.sampled_from(KEYS), value=values)
    def put(self, namespace, key, value):
        self.ours.put(namespace, key, value)
        self.reference.put(namespace, key, value)

    @rule(namespace=st.sampled_from(NAMESPACES), key=st.sampled_from(KEYS))
    def delete(self, namespace, key):
        self.ours.delete(namespace, key)
        self.reference.delete(namespace, key)

    @rule(namespace=st.sampled_from(NAMESPACES), key=st.sampled_from(KEYS))
    def get_agrees(self, namespace, key):
        ours, reference = self.ours.get(namespace, key), self.reference.get(namespace, key)
        assert (ours is None) == (reference is None)
        if ours is not None:
            assert (ours.namespace, ours.key, ours.value) == (
                reference.namespace,
                reference.key,
                reference.value,
            )

    @rule(prefix=prefixes, conditions=filters)
    def listing_agrees(self, prefix, conditions):
        ours = self.ours.search(prefix, filter=conditions, limit=EVERYTHING)
        reference = self.reference.search(prefix, filter=conditions, limit=EVERYTHING)
        assert triples(ours) == triples(reference)

    @precondition(lambda self: bool(self.reference.search((), limit=1)))
    @rule(data=st.data(), prefix_depth=st.integers(0, 2))
    def search_finds_the_item_searched_for(self, data, prefix_depth):
        held = self.reference.search((), limit=EVERYTHING)
        wanted = data.draw(st.sampled_from(sorted(held, key=lambda i: (i.namespace, i.key))))
        prefix = tuple(wanted.namespace[:prefix_depth])
        found = self.ours.search(prefix, query=wanted.value["code"], limit=10)
        assert (tuple(wanted.namespace), wanted.key) in {(i.namespace, i.key) for i in found}
        assert triples(found) <= triples(held)
        assert all(i.namespace[: len(prefix)] == prefix and i.score is not None for i in found)

    @rule(
        prefix=st.sampled_from([None, ("users",), ("docs", "*")]),
        suffix=st.sampled_from([None, ("a",), ("*",)]),
        max_depth=st.sampled_from([None, 1, 2]),
        offset=st.integers(0, 2),
        limit=st.integers(1, 5),
    )
    def namespaces_agree(self, prefix, suffix, max_depth, offset, limit):
        options = dict(
            prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset
        )
        assert self.ours.list_namespaces(**options) == namespaces_with_items(
            self.reference
        ).list_namespaces(**options)

    @invariant()
    def every_item_is_kept_once(self):
        if hasattr(self, "ours"):
            held = self.reference.search((), limit=EVERYTHING)
            assert triples(self.ours.search((), limit=EVERYTHING)) == triples(held)


StoreAgreement.TestCase.settings = settings(
    max_examples=15,
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_the_store_agrees_with_langgraphs_in_memory_store = StoreAgreement.TestCase


# put, put, update, get, query search, delete, list namespaces: one batch on an empty workspace
ROUND_TRIP = [
    PutOp(("users", "alice"), "prefs", {"food": "sushi"}),
    PutOp(("users", "bob"), "prefs", {"food": "ramen"}),
    PutOp(("users", "alice"), "prefs", {"food": "sushi and tea"}),
    GetOp(("users", "alice"), "prefs"),
    SearchOp(("users",), query="tea"),
    PutOp(("users", "bob"), "prefs", None),
    ListNamespacesOp(),
]


def check_round_trip(got: list) -> None:
    """ROUND_TRIP's answers (from `batch` or `abatch`), held against InMemoryStore's."""
    reference = InMemoryStore()
    expected = [reference.batch([op])[0] for op in ROUND_TRIP]
    assert got[3].value == expected[3].value == {"food": "sushi and tea"}
    assert [(i.namespace, i.key) for i in got[4]] == [(("users", "alice"), "prefs")]
    assert got[6] == [("users", "alice")]
    assert expected[6] == [("users", "alice"), ("users", "bob")]  # the reference keeps bob's


def test_abatch_over_an_async_handle_agrees_with_the_reference(empty_live):
    async def scenario():
        async with empty_live.async_handle() as handle:
            return await MinisphereStore(handle).abatch(ROUND_TRIP)

    check_round_trip(asyncio.run(scenario()))


def test_a_sync_call_on_an_async_handle_is_refused_not_left_unawaited(empty_live):
    async def scenario():
        async with empty_live.async_handle() as handle:
            with pytest.raises(ValueError, match="asynchronous"):
                MinisphereStore(handle).get(("users",), "k")

    asyncio.run(scenario())


def test_ttl_is_refused_because_entries_do_not_expire(empty_live):
    store = MinisphereStore(empty_live.ws)
    with pytest.raises(NotImplementedError):
        store.put(("users",), "k", {"a": 1}, ttl=5)
    with pytest.raises(ValueError, match="TTL"):
        store.batch([PutOp(("users",), "k", {"a": 1}, ttl=5.0)])


def test_an_updated_item_keeps_its_entry_and_gains_a_revision(empty_live):
    store = MinisphereStore(empty_live.ws)
    store.put(("users",), "k", {"v": "first"})
    store.put(("users",), "k", {"v": "second"})
    [entry] = empty_live.ws.list_recent(tag="langgraph:item")
    revisions = empty_live.ws.get_entry(entry.id).model_dump(by_alias=True)["revisions"]
    assert len(revisions) == 1 and '"first"' in revisions[0]["content"]
