"""One workspace = one SQLite file. The plain-Python engine the Ray actors wrap."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from minisphere.engine import db, forget_ledger, idempotency, location, scrub
from minisphere.engine.arguments import Args
from minisphere.engine.clock import Clock, SystemClock
from minisphere.engine.constants import DEFAULT_SYNCHRONOUS
from minisphere.engine.forget_ledger import ForgetLedger
from minisphere.engine.hooks import NO_HOOKS, NOT_PREPARED, Handler, WorkspaceHooks, prepare_calls
from minisphere.engine.location import CopyLocation
from minisphere.engine.methods import METHODS, Method, find_method, parse_args
from minisphere.engine.wal_checkpoints import WalCheckpoints
from minisphere.errors import MiniSphereError, WorkspaceClosed
from minisphere.reply import Reply
from minisphere.wire import answers as A
from minisphere.wire.recall_answer import RecallAnswer

if TYPE_CHECKING:  # pragma: no cover - types only: the binding's code is imported when bound
    from minisphere.engine.embedding.base import EmbeddingProvider
    from minisphere.engine.vectors.backfill import BackfillSummary, Progress
    from minisphere.engine.vectors.binding import VectorBinding
    from minisphere.engine.vectors.semantic import SemanticSettings

log = logging.getLogger("minisphere.workspace")

# A call's body: a JSON object, arguments already parsed (`methods.parse_args`), or none.
Body = dict[str, Any] | Args | None
# A call for `run_batch`: (method name, body) or (method name, body, idempotency key).
Call = tuple[str, Body] | tuple[str, Body, str | None]


class Workspace:
    """Open a workspace file (creating and migrating it), then `call(method, args)`.

    Writes run in `BEGIN IMMEDIATE … COMMIT` on the one writer connection: a failure anywhere
    in a write rolls the whole write back. `run_batch` commits many writes in one transaction
    (group commit) with a savepoint around each, so one bad write never spoils the others.
    Every call goes through the steps of `engine/hooks.py`; a file with a vector binding gets
    the binding as its hooks (`self.vectors`), any other file none.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Clock | None = None,
        synchronous: str = DEFAULT_SYNCHRONOUS,
        embedder: EmbeddingProvider | None = None,
        vector_settings: SemanticSettings | None = None,
        reembed_other: bool = False,
    ) -> None:
        self.path = Path(path)
        self.clock: Clock = clock or SystemClock()
        self._lock = threading.RLock()
        self._conn: db.Connection | None = db.connect(self.path, synchronous=synchronous)
        # the optional vector binding; None: its code is never imported
        self.vectors: VectorBinding | None = None
        self.checkpoints = WalCheckpoints(self._lock, lambda: self.conn)  # of the WAL
        self.rewrites = scrub.ForgetRewrites(self._lock, lambda: self.conn, self.path)
        self.forget_ledger = ForgetLedger(self._lock, lambda: self.conn, self.transaction)
        self.epoch: int | None = None  # the fencing epoch this writer holds (None: unfenced)
        try:
            new_file = db.schema_version(self._conn) == 0
            self.schema_version = db.migrate(self._conn, self.clock.now_ms())
            if new_file:  # written by this connection only, from the start
                scrub.mark_built_clean(self._conn)
            self.position = location.read_location(self._conn).position  # of this copy
            if embedder is not None or db.read_vector_binding(self._conn) is not None:
                from minisphere.engine.vectors.binding import attach

                self.vectors = attach(self, embedder, vector_settings, reembed_other)
        except BaseException:
            self._conn.close()
            raise

    @property
    def hooks(self) -> WorkspaceHooks:
        return self.vectors if self.vectors is not None else NO_HOOKS

    # ---- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        self.hooks.close()  # outside the lock: a backfill stopping may need it for a moment
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @property
    def closed(self) -> bool:
        return self._conn is None

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def conn(self) -> db.Connection:
        if self._conn is None:
            raise WorkspaceClosed(f"workspace {self.path.name} is closed")
        return self._conn

    @contextmanager
    def transaction(self) -> Iterator[db.Connection]:
        with self._lock:
            conn = self.conn
            try:
                with location.fenced_write(conn, self.epoch):
                    yield conn
            finally:
                self.hooks.transaction_ended(conn)

    @contextmanager
    def reading(self) -> Iterator[db.Connection]:
        """The writer connection for reads, while no write runs on it."""
        with self._lock:
            yield self.conn

    # ---- where this copy stands (engine/location.py) ---------------------------------------
    def location(self) -> CopyLocation:
        with self.reading() as conn:
            return location.read_location(conn)

    def claim(self, generation: str | None, epoch: int) -> CopyLocation:
        """Open the file as the owner with `epoch` (refused when a newer owner stamped it), and
        drop expired idempotency keys in the same commit (one per wake); from now on every
        write transaction checks that no newer owner has taken over."""
        with self.transaction() as conn:
            claimed = location.claim(conn, generation, epoch)
            idempotency.prune(conn, self.clock.now_ms())
        self.epoch, self.position = epoch, claimed.position
        return claimed

    def prune_expired_keys(self) -> None:
        """Drop idempotency keys past their keep time (housekeeping: not a change of memory)."""
        with self.transaction() as conn:
            idempotency.prune(conn, self.clock.now_ms())

    # ---- dispatch ----------------------------------------------------------------------------
    def prepare(
        self, calls: Sequence[tuple[str, Body]], conn: db.Connection | None = None
    ) -> list[Any]:
        """The hooks' `prepare` step for raw (method name, body) calls, outside any transaction:
        one value per call, to hand to `run_batch`. Calls the hooks do not take part in (or
        whose arguments are invalid: `run_batch` reports those) get None. `conn`: a connection
        that only reads (default: the writer's, taken between writes)."""
        if conn is None:
            return prepare_calls(self.hooks, calls, self.reading)
        return prepare_calls(self.hooks, calls, lambda: nullcontext(conn))

    def call(
        self, method_name: str, body: Body = None, *, idempotency_key: str | None = None
    ) -> Any:
        method = find_method(method_name)
        args = parse_args(method, body)
        if method.access == "read":
            prepared = self.prepare([(method_name, body)])[0]
            with self.reading() as conn:
                result = self._handler(method, prepared)(conn, args, self.clock.now_ms())
            if method.follow_up is not None:
                self.run_batch([method.follow_up(result)])
            return result
        [reply] = self.run_batch([(method_name, args, idempotency_key)])
        return reply.unwrap()

    def _handler(self, method: Method, prepared: Any) -> Handler:
        if method.name not in self.hooks.hooked:
            return method.handler
        return self.hooks.handler(method, prepared) or method.handler

    def run_batch(
        self, calls: Iterable[Call], prepared: Sequence[Any] | None = None
    ) -> list[Reply[Any]]:
        """Group commit: every call in one transaction, each under its own savepoint.

        A call is (method name, body) or (method name, body, idempotency key). `prepared`: the
        values `prepare` made for the calls (NOT_PREPARED, or no list at all: prepare them
        here, before the transaction). Returns a `Reply` (the result, or the error) per call,
        in order. Only errors of the call itself are captured; a failure of the commit itself
        propagates (then nothing in the group is durable). What runs after the commit (the
        hooks' `after_commit`, a checkpoint after a forget) can never fail the batch: its
        calls are committed and must not be run again.
        """
        keyed: list[tuple[str, Body, str | None]] = [
            call if len(call) == 3 else (*call, None) for call in calls
        ]
        payloads = list(prepared) if prepared is not None else [NOT_PREPARED] * len(keyed)
        missing = [i for i, value in enumerate(payloads) if value is NOT_PREPARED]
        if missing:
            for index, value in zip(missing, self.prepare([keyed[i][:2] for i in missing])):
                payloads[index] = value
        outcomes: list[Reply[Any]] = []
        forgot = changed = False
        with self.transaction() as conn:
            now_ms = self.clock.now_ms()
            idempotency.prune(conn, now_ms)
            for (method_name, body, key), payload in zip(keyed, payloads):
                rows_before = conn.total_changes
                conn.execute("SAVEPOINT op")
                try:
                    method = find_method(method_name, internal=True)
                    args = parse_args(method, body)
                    replay = idempotency.recall(conn, key, method_name, args)
                    if replay is not None:
                        conn.execute("RELEASE op")
                        outcomes.append(Reply.done(replay, replayed=True))
                        continue
                    result = self._handler(method, payload)(conn, args, now_ms)
                    if method_name == "forget":
                        idempotency.forget_answers(conn, args.id)
                        forget_ledger.record_forget(conn, now_ms)
                    idempotency.remember(conn, key, method_name, args, result, now_ms)
                except (MiniSphereError, db.DatabaseError) as exc:
                    conn.execute("ROLLBACK TO op")
                    conn.execute("RELEASE op")
                    outcomes.append(Reply.failed(exc))
                    continue
                conn.execute("RELEASE op")
                forgot = forgot or method_name == "forget"
                # a change of the memory: rows written, and not by a read's own follow-up
                changed = changed or (method_name in METHODS and conn.total_changes > rows_before)
                outcomes.append(Reply.done(result))
            if changed:
                position = location.advance(conn)
        if changed:
            self.position = position  # committed
        self._after_commit(forgot)
        return outcomes

    def _after_commit(self, forgot: bool) -> None:
        try:
            self.hooks.after_commit()
        except Exception:  # the batch is committed; this is housekeeping
            log.exception("after-commit step of %s failed; its writes are committed", self.path)
        self.rewrites.after_commit(forgot)
        self.checkpoints.after_commit(forgot)

    # ---- optional vector binding (engine/vectors/binding.py) --------------------------------
    def enable_vectors(
        self,
        embedder: EmbeddingProvider,
        *,
        replace: bool = False,
        batch_size: int | None = None,
        progress_callback: Progress | None = None,
        vector_settings: SemanticSettings | None = None,
    ) -> BackfillSummary:
        """Bind an embedding provider and backfill every entry's vector (progress: done, total)."""
        vectors = self.switch_vectors(embedder, vector_settings, replace=replace)
        return vectors.backfill(batch_size, progress_callback)

    def switch_vectors(
        self,
        embedder: EmbeddingProvider,
        vector_settings: SemanticSettings | None = None,
        *,
        replace: bool = True,
    ) -> VectorBinding:
        """Bind `embedder` (with `replace`, in place of any other provider, whose vectors are
        dropped), leaving the entries to `vectors.backfill`, which may run while the workspace
        serves. The binding is kept only once recorded: a failed bind leaves none half-made."""
        from minisphere.engine.vectors.binding import attach

        vectors = self.vectors if self.vectors is not None else attach(self, None, vector_settings)
        vectors.switch(embedder, replace=replace)
        self.vectors = vectors
        return vectors

    # ---- Pythonic wrappers (contract names in snake_case) -------------------------------------
    # each answers its method's shape (`METHODS[name].answer`): `call` cannot say which
    def capture(self, content: str, **options: Any) -> A.CaptureAnswer:
        return cast("A.CaptureAnswer", self.call("capture", {"content": content, **options}))

    def append(self, id: str, addition: str, **options: Any) -> A.EntryDetail:
        return cast(
            "A.EntryDetail", self.call("append", {"id": id, "addition": addition, **options})
        )

    def update(self, id: str, content: str) -> A.EntryDetail:
        return cast("A.EntryDetail", self.call("update", {"id": id, "content": content}))

    def set_status(self, id: str, status: str) -> A.EntryDetail:
        return cast("A.EntryDetail", self.call("setStatus", {"id": id, "status": status}))

    def forget(self, id: str) -> A.ForgetAnswer:
        return cast("A.ForgetAnswer", self.call("forget", {"id": id}))

    def link(self, src: str, dst: str, type: str, **options: Any) -> A.LinkAnswer:
        return cast(
            "A.LinkAnswer", self.call("link", {"src": src, "dst": dst, "type": type, **options})
        )

    def unlink(self, src: str, dst: str, type: str) -> A.UnlinkAnswer:
        return cast("A.UnlinkAnswer", self.call("unlink", {"src": src, "dst": dst, "type": type}))

    def recall(self, query: str, **options: Any) -> RecallAnswer:
        return cast("RecallAnswer", self.call("recall", {"query": query, **options}))

    def get_entry(self, id: str) -> A.EntryDetail:
        return cast("A.EntryDetail", self.call("getEntry", {"id": id}))

    def list_recent(self, **options: Any) -> A.EntryList:
        return cast("A.EntryList", self.call("listRecent", options))

    def connections(self, id: str) -> A.ConnectionsAnswer:
        return cast("A.ConnectionsAnswer", self.call("connections", {"id": id}))

    def graph_view(self, seed_ids: list[str], **options: Any) -> A.GraphAnswer:
        return cast("A.GraphAnswer", self.call("graphView", {"seedIds": seed_ids, **options}))

    def get_tags(self, **opts: Any) -> A.TagsAnswer:
        return cast("A.TagsAnswer", self.call("getTags", opts))

    def get_count(self) -> A.CountAnswer:
        return cast("A.CountAnswer", self.call("getCount", None))

    def get_stats(self) -> A.StatsAnswer:
        return cast("A.StatsAnswer", self.call("getStats", None))

    def get_brief(self) -> A.BriefAnswer:
        return cast("A.BriefAnswer", self.call("getBrief", None))

    def run_staleness_pass(self, **options: Any) -> A.StalenessPassAnswer:
        return cast("A.StalenessPassAnswer", self.call("runStalenessPass", options))
