"""The engine's method table: contract method name -> argument model, handler, access class,
and the one argument parser every layer uses (`parse_args`).

This is the single place that says which contract methods exist in the engine. The service routes
and the machine-readable contract are checked against it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from minisphere.engine import reads, staleness, writes
from minisphere.engine.arguments import (
    AppendArgs,
    Args,
    CaptureArgs,
    GetEntryArgs,
    GraphViewArgs,
    IdArgs,
    LinkArgs,
    ListRecentArgs,
    NoArgs,
    NoteRecalledArgs,
    RecallArgs,
    SetStatusArgs,
    StalenessPassArgs,
    TagsArgs,
    UnlinkArgs,
    UpdateArgs,
)
from minisphere.engine.retrieval.recall import note_recalled, recall
from minisphere.errors import InvalidArgument, NotFound
from minisphere.wire import answers as A
from minisphere.wire.recall_answer import RecallAnswer

Access = Literal["read", "write", "maintenance"]


@dataclass(frozen=True)
class Method:
    name: str
    args: type[Args]
    access: Access
    # handler(conn, args, now_ms) -> result. Writes run inside a transaction.
    handler: Callable[[Any, Any, int], Any]
    # the answer's shape (a `minisphere.wire` TypedDict): what the handler returns, and what the
    # routes and the MCP tools publish
    answer: type[Any]
    # positional contract parameters (the rest is the options object), e.g. capture(content, {...})
    positional: tuple[str, ...] = ()
    # a read may ask for one small internal write after it answered: result -> (method, body)
    follow_up: Callable[[Any], tuple[str, dict[str, Any]]] | None = None


def _entry_after(write: Callable[[Any, Any, int], str]) -> Callable[[Any, Any, int], Any]:
    """Writes that change one entry answer with its new state."""

    def run(conn: Any, args: Any, now_ms: int) -> Any:
        entry_id = write(conn, args, now_ms)
        return reads.get_entry(conn, IdArgs(id=entry_id), now_ms)

    return run


def _recalled_ids(result: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "noteRecalled", {"ids": [item["id"] for item in result["items"]]}


METHODS: dict[str, Method] = {
    m.name: m
    for m in [
        # reads
        Method(
            "recall", RecallArgs, "read", recall, RecallAnswer, ("query",), follow_up=_recalled_ids
        ),
        Method("listRecent", ListRecentArgs, "read", reads.list_recent, A.EntryList),
        Method("getEntry", GetEntryArgs, "read", reads.get_entry, A.EntryDetail, ("id",)),
        Method("connections", IdArgs, "read", reads.connections, A.ConnectionsAnswer, ("id",)),
        Method("graphView", GraphViewArgs, "read", reads.graph_view, A.GraphAnswer),
        Method("getTags", TagsArgs, "read", lambda c, a, t: reads.get_tags(c, a, t), A.TagsAnswer),
        Method("getCount", NoArgs, "read", lambda c, a, t: reads.get_count(c), A.CountAnswer),
        Method("getStats", NoArgs, "read", lambda c, a, t: reads.get_stats(c), A.StatsAnswer),
        Method("getBrief", NoArgs, "read", lambda c, a, t: reads.get_brief(c, t), A.BriefAnswer),
        # writes
        Method("capture", CaptureArgs, "write", writes.capture, A.CaptureAnswer, ("content",)),
        Method(
            "append",
            AppendArgs,
            "write",
            _entry_after(writes.append),
            A.EntryDetail,
            ("id", "addition"),
        ),
        Method(
            "update",
            UpdateArgs,
            "write",
            _entry_after(writes.update),
            A.EntryDetail,
            ("id", "content"),
        ),
        Method(
            "setStatus",
            SetStatusArgs,
            "write",
            _entry_after(writes.set_status),
            A.EntryDetail,
            ("id", "status"),
        ),
        Method("forget", IdArgs, "write", writes.forget, A.ForgetAnswer, ("id",)),
        Method("link", LinkArgs, "write", writes.link, A.LinkAnswer, ("src", "dst", "type")),
        Method(
            "unlink", UnlinkArgs, "write", writes.unlink, A.UnlinkAnswer, ("src", "dst", "type")
        ),
        # maintenance (scheduler only)
        Method(
            "runStalenessPass",
            StalenessPassArgs,
            "maintenance",
            staleness.run_staleness_pass,
            A.StalenessPassAnswer,
        ),
    ]
}

# Engine-internal writes: never routed, not part of the contract surface.
INTERNAL_METHODS: dict[str, Method] = {
    "noteRecalled": Method("noteRecalled", NoteRecalledArgs, "write", note_recalled, A.NotedAnswer),
}


def find_method(method_name: str, *, internal: bool = False) -> Method:
    """The method of that name (engine-internal ones only when `internal`), or NotFound."""
    method = METHODS.get(method_name) or (INTERNAL_METHODS.get(method_name) if internal else None)
    if method is None:
        raise NotFound(f"unknown method {method_name!r}")
    return method


def describe_validation_error(method: str, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "body"
        parts.append(f"{where}: {err['msg']}")
    return f"{method}: " + "; ".join(parts)


def parse_args(method: Method, body: Any) -> Any:
    """A method's arguments from a JSON-like body; InvalidArgument says what is wrong. Arguments
    already validated (an instance of the method's model, as the ingress sends them) pass as
    they are: a body is validated once, not again in every layer it crosses."""
    if isinstance(body, method.args):
        return body
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise InvalidArgument(f"{method.name}: arguments must be a JSON object")
    try:
        return method.args.model_validate(body)
    except ValidationError as exc:
        raise InvalidArgument(describe_validation_error(method.name, exc)) from None
