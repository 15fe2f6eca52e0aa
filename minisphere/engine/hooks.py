"""What an optional binding may add around a workspace's calls, without the engine knowing it.

Every call of the engine runs in the same steps, whoever drives it (`Workspace` alone, or the
group-commit writer and the read pool of a hosted workspace):

1. parse the arguments (`methods.parse_args`);
2. `prepare` — outside any transaction and any lock, on a connection that only reads: work that
   may be slow and must never hold the writer, such as embedding the text a write will store;
3. the in-transaction step — the method's own handler, or the one `handler` returns for it;
4. `after_commit` — once the transaction that held the call has committed;
5. `transaction_ended` — after every write transaction, whatever ran in it (a bind, an import
   batch, a group commit), committed or not.

`WorkspaceHooks` is the interface with do-nothing defaults; the vector binding
(`engine/vectors/binding.py`) implements it. Because the engine only knows this interface, it
never imports the binding at module level and the binding never imports the workspace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from minisphere.engine.methods import Method, find_method, parse_args
from minisphere.errors import MiniSphereError

if TYPE_CHECKING:  # pragma: no cover - types only
    from minisphere.engine.db import Connection

Handler = Callable[[Any, Any, int], Any]  # handler(conn, args, now_ms) -> result


class _NotPrepared:
    """Marks a call whose `prepare` step has not run yet (the writer then runs it itself)."""

    def __repr__(self) -> str:
        return "NOT_PREPARED"


NOT_PREPARED = _NotPrepared()


class WorkspaceHooks:
    """The do-nothing hooks of a workspace without bindings."""

    hooked: frozenset[str] = frozenset()  # method names `prepare`/`handler` take part in
    # read methods whose `prepare` reads nothing (conn None) and only starts work: a host may
    # run it as soon as the call arrives, before the read waits for a thread
    started_on_arrival: frozenset[str] = frozenset()

    def prepare(self, calls: list[tuple[str, Any]], conn: Connection | None) -> list[Any]:
        """One prepared value per (method name, parsed arguments) of a hooked method, computed
        outside any transaction; `conn` may only be read (None: the calls are all of
        `started_on_arrival`)."""
        return [None] * len(calls)

    def handler(self, method: Method, prepared: Any) -> Handler | None:
        """The in-transaction handler that replaces `method.handler` (None: the method's own)."""
        return None

    def prepare_connection(self, conn: Connection) -> None:
        """Make a freshly opened connection to the file able to run the hooked handlers."""

    def after_commit(self) -> None:
        """Called once after each commit of calls (outside the transaction)."""

    def transaction_ended(self, conn: Connection) -> None:
        """Called after every write transaction on the writer's connection, committed or rolled
        back, with the writer's lock still held (`conn` may only be read)."""

    def close(self) -> None:
        """Called as the workspace closes, before its connection does: stop background work."""


NO_HOOKS = WorkspaceHooks()


def prepare_calls(
    hooks: WorkspaceHooks,
    calls: Sequence[tuple[str, Any]],
    reading: Callable[[], AbstractContextManager[Connection]],
) -> list[Any]:
    """Step 2 for raw (method name, body) calls: one value per call, None for a call the hooks
    take no part in or whose arguments are invalid (the in-transaction step reports those).
    `reading` gives the read connection, taken only when some call needs it."""
    wanted = []
    for index, (method_name, body) in enumerate(calls):
        if method_name not in hooks.hooked:
            continue
        try:
            wanted.append((index, method_name, parse_args(find_method(method_name), body)))
        except MiniSphereError:
            continue
    prepared: list[Any] = [None] * len(calls)
    if wanted:
        with reading() as conn:
            values = hooks.prepare([(name, args) for _, name, args in wanted], conn)
        for (index, _, _), value in zip(wanted, values):
            prepared[index] = value
    return prepared
