"""LangGraph adapter (`pip install 'minisphere[langgraph]'`): a `BaseStore` kept in a workspace,
so a graph's long-term memory is the agent's Mini-Sphere memory.

    from minisphere.integrations.langgraph import MinisphereStore
    store = MinisphereStore(ws)                       # any workspace handle (see `handles`)
    store.put(("users", "alice"), "prefs", {"food": "likes sushi"})
    store.search(("users",), query="sushi")           # recall, prefiltered by the namespace

How it maps (docs/get-started/first-agent.md lists the differences):

- an item is one entry whose content is the JSON `{"namespace", "key", "value", "item"}`
  (`item`, a digest of namespace and key, keeps two items whose texts differ only in case or
  spacing from being taken for duplicates by capture's exact-duplicate check);
- the namespace becomes tags: `langgraph:item` on every item, `lg-in:<digest>` for each
  prefix of its namespace, `lg-ns:<digest>` for the namespace itself and `lg-key:<digest>` for
  namespace + key. Digests, not the labels, because tags are lower-cased and at most 64
  characters while labels are case-sensitive and unbounded;
- put on a new key captures; on an existing key it updates (a revision); a `None` value or
  delete forgets. A namespace is listed while it holds an item: one `langgraph:namespace`
  entry per namespace is captured with its first item and forgotten with its last;
- search with a query is recall (`hops=0`, full content) prefiltered by the prefix's tag, and
  its score is recall's; without a query it lists the prefix's items newest first.
  `filter` is applied to the candidates, with LangGraph's operators ($eq, $ne, $gt, $gte,
  $lt, $lte);
- no TTL (`supports_ttl = False`) and no vector `index` fields: every item is indexed for
  keyword search.

A batch runs its operations in order, each over a few service calls; it is not atomic. Each
call goes through the handle and so inherits its overload retry (`overload_retries=` of the
client that made it): a call refused as not run (503 with Retry-After) is sent again, a bounded
number of times, before the batch sees a `ServiceError`.
The logic is written once, as plans that yield `(method, arguments)` calls and receive their
answers, driven by a sync loop (`batch`) or an async one (`abatch`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Generator, Iterable
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from minisphere.engine import constants as C
from minisphere.integrations.handles import acall, call

ITEM_TAG = "langgraph:item"
NAMESPACE_TAG = "langgraph:namespace"
DIGEST_HEX_CHARS = 32  # 128 bits of SHA-256
FIXED_ITEM_TAGS = 3  # item, namespace, key
MAX_NAMESPACE_DEPTH = C.MAX_TAGS_PER_ENTRY - FIXED_ITEM_TAGS
LIST_MAX = C.LIST_RECENT_MAX_N  # items or namespaces one listing sees
SEARCH_MAX = C.RECALL_MAX_TOP_K  # candidates one query search sees
MS_PER_S = 1000
COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}

Plan = Generator[tuple[str, dict[str, Any]], Any, Any]


def _digest(*parts: Any) -> str:
    text = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_HEX_CHARS]


def _prefix_tag(prefix: tuple[str, ...]) -> str:
    return f"lg-in:{_digest(*prefix)}" if prefix else ITEM_TAG


def _namespace_tag(namespace: tuple[str, ...]) -> str:
    return f"lg-ns:{_digest(*namespace)}"


def _key_tag(namespace: tuple[str, ...], key: str) -> str:
    return f"lg-key:{_digest(list(namespace), key)}"


def _registry_tag(namespace: tuple[str, ...]) -> str:
    return f"lg-nsrec:{_digest(*namespace)}"


def _item_tags(namespace: tuple[str, ...], key: str) -> list[str]:
    if not namespace or len(namespace) > MAX_NAMESPACE_DEPTH:
        raise ValueError(
            f"a namespace holds 1 to {MAX_NAMESPACE_DEPTH} labels "
            f"(one tag each, {C.MAX_TAGS_PER_ENTRY} tags per entry)"
        )
    prefixes = [_prefix_tag(namespace[:depth]) for depth in range(1, len(namespace) + 1)]
    return [ITEM_TAG, _namespace_tag(namespace), _key_tag(namespace, key), *prefixes]


def _content(namespace: tuple[str, ...], key: str, value: Any) -> str:
    if not isinstance(value, dict):
        raise ValueError(f"an item's value is a JSON object, not {type(value).__name__}")
    return json.dumps(
        {
            "namespace": list(namespace),
            "key": key,
            "value": value,
            "item": _digest(list(namespace), key),
        },
        ensure_ascii=False,
    )


def _time(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / MS_PER_S, tz=UTC)


def _item(entry: dict[str, Any], score: float | None = None, searched: bool = False) -> Item:
    body = json.loads(entry["content"])
    fields = dict(
        namespace=tuple(body["namespace"]),
        key=body["key"],
        value=body["value"],
        created_at=_time(entry["createdAt"]),
        updated_at=_time(entry["updatedAt"]),
    )
    return SearchItem(score=score, **fields) if searched else Item(**fields)


def matches(value: dict[str, Any], conditions: dict[str, Any] | None) -> bool:
    """LangGraph's filter: equality per field (nested dicts and lists compared as a whole)
    or an operator object such as {"$gte": 3}."""
    return all(_holds(value.get(field), wanted) for field, wanted in (conditions or {}).items())


def _holds(actual: object, wanted: object) -> bool:
    if isinstance(wanted, dict) and any(k.startswith("$") for k in wanted):
        return all(_operator(actual, op, operand) for op, operand in wanted.items())
    if isinstance(wanted, dict):
        return isinstance(actual, dict) and matches(actual, wanted)
    return actual == wanted


def _operator(actual: object, op: str, operand: object) -> bool:
    if op == "$eq":
        return actual == operand
    if op == "$ne":
        return actual != operand
    if op not in COMPARISONS:
        raise ValueError(
            f"unknown filter operator {op!r}; known: $eq, $ne, " + ", ".join(COMPARISONS)
        )
    return _as_numbers(COMPARISONS[op], actual, operand)


def _as_numbers(compare: Callable[[float, float], bool], actual: Any, operand: Any) -> bool:
    """`compare` of two JSON values as numbers; False when either is not one (`float` is tried
    on any value, hence Any)."""
    try:
        return compare(float(actual), float(operand))
    except (TypeError, ValueError):
        return False


# ---- plans: each yields (method, arguments) and receives the service's answer ------------------


def _full(entry: dict[str, Any]) -> Plan:
    """The entry with its whole content (listings cut content at C.LIST_CONTENT_MAX_CHARS)."""
    if entry.get("truncated"):
        entry = yield "getEntry", {"id": entry["id"]}
    return entry


def _listed(tag: str) -> Plan:
    answer = yield "listRecent", {"tag": tag, "n": LIST_MAX}
    entries = []
    for entry in answer["items"]:
        entries.append((yield from _full(entry)))
    return entries


def _find(namespace: tuple[str, ...], key: str) -> Plan:
    answer = yield "listRecent", {"tag": _key_tag(namespace, key), "n": 1}
    if not answer["items"]:
        return None
    return (yield from _full(answer["items"][0]))


def _get(op: GetOp) -> Plan:
    entry = yield from _find(tuple(op.namespace), op.key)
    return _item(entry) if entry is not None else None


def _put(op: PutOp) -> Plan:
    namespace = tuple(op.namespace)
    if op.ttl is not None:
        raise ValueError("MinisphereStore keeps no TTL (supports_ttl is False); give ttl=None")
    existing = yield from _find(namespace, op.key)
    if op.value is None:
        if existing is not None:
            yield "forget", {"id": existing["id"]}
            yield from _unregister_if_empty(namespace)
        return None
    content = _content(namespace, op.key, dict(op.value))
    if existing is not None:
        yield "update", {"id": existing["id"], "content": content}
        return None
    answer = yield (
        "capture",
        {
            "content": content,
            "tags": _item_tags(namespace, op.key),
            "kind": "semantic",
            "volatility": "durable",
            "source": "langgraph",
        },
    )
    if answer["outcome"] != "stored":
        raise ValueError(f"the workspace did not store the item ({answer['outcome']})")
    # the namespace's record: an exact duplicate of an existing record is blocked, which is
    # what we want (one record per namespace) without a look-up first
    yield (
        "capture",
        {
            "content": json.dumps(
                {"namespace": list(namespace), "item": _digest(*namespace)}, ensure_ascii=False
            ),
            "tags": [NAMESPACE_TAG, _registry_tag(namespace)],
            "kind": "semantic",
            "volatility": "durable",
            "source": "langgraph",
        },
    )
    return None


def _unregister_if_empty(namespace: tuple[str, ...]) -> Plan:
    left = yield "listRecent", {"tag": _namespace_tag(namespace), "n": 1}
    if left["items"]:
        return
    record = yield "listRecent", {"tag": _registry_tag(namespace), "n": 1}
    for entry in record["items"]:
        yield "forget", {"id": entry["id"]}


def _search(op: SearchOp) -> Plan:
    prefix = tuple(op.namespace_prefix)
    if op.query:
        answer = yield (
            "recall",
            {
                "query": op.query,
                "topK": SEARCH_MAX,
                "tag": _prefix_tag(prefix),
                "hops": 0,
                "full": True,
            },
        )
        found = [_item(entry, entry["score"], searched=True) for entry in answer["items"]]
    else:
        found = [_item(entry, searched=True) for entry in (yield from _listed(_prefix_tag(prefix)))]
    kept = [
        item
        for item in found
        if item.namespace[: len(prefix)] == prefix and matches(item.value, op.filter)
    ]
    return kept[op.offset : op.offset + op.limit]


def _list_namespaces(op: ListNamespacesOp) -> Plan:
    records = yield from _listed(NAMESPACE_TAG)
    namespaces = {tuple(json.loads(entry["content"])["namespace"]) for entry in records}
    chosen: Collection[tuple[str, ...]] = [
        ns for ns in namespaces if all(_matches_condition(ns, c) for c in op.match_conditions or ())
    ]
    if op.max_depth is not None:
        chosen = {ns[: op.max_depth] for ns in chosen}
    return sorted(chosen)[op.offset : op.offset + op.limit]


def _matches_condition(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type not in ("prefix", "suffix"):
        raise ValueError(f"unknown namespace match type {condition.match_type!r}")
    part = (
        namespace[: len(path)]
        if condition.match_type == "prefix"
        else namespace[len(namespace) - len(path) :]
    )
    return all(want in ("*", have) for have, want in zip(part, path))


# each plan takes the operation type it is keyed by
PLANS: dict[type, Callable[[Any], Plan]] = {
    GetOp: _get,
    PutOp: _put,
    SearchOp: _search,
    ListNamespacesOp: _list_namespaces,
}


def _plan(op: Op) -> Plan:
    if type(op) not in PLANS:
        raise ValueError(f"unknown store operation {type(op).__name__}")
    return PLANS[type(op)](op)


class MinisphereStore(BaseStore):
    """LangGraph's `BaseStore` over one Mini-Sphere workspace (see the module docstring)."""

    supports_ttl = False

    def __init__(self, workspace: Any):
        self.workspace = workspace

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._drive(_plan(op)) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return [await self._adrive(_plan(op)) for op in ops]

    def _drive(self, plan: Plan) -> Any:
        answer = None
        try:
            while True:
                method, arguments = plan.send(answer)
                answer = call(self.workspace, "call", method, **arguments)
        except StopIteration as done:
            return done.value

    async def _adrive(self, plan: Plan) -> Any:
        answer = None
        try:
            while True:
                method, arguments = plan.send(answer)
                answer = await acall(self.workspace, "call", method, **arguments)
        except StopIteration as done:
            return done.value
