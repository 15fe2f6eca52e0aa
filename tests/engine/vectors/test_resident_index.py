"""The resident index never drifts from sqlite-vec: after any sequence of writes (capture,
update, append, forget, a rolled-back write, an import, a backfill, a rebind, a reopen) its KNN
answers what `entries_vec` answers, prefiltered or not, and it holds exactly the file's vectors."""

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minisphere.engine.embedding.hash_provider import HashProvider
from minisphere.engine.vectors import table
from minisphere.engine.workspace import Workspace
from minisphere.transfer import export_lines, import_lines

WORDS = [
    "deploy",
    "queue",
    "billing",
    "lunch",
    "postgres",
    "cache",
    "friday",
    "release",
    "hiking",
    "sister",
    "guitar",
    "paris",
]
PROVIDERS = [HashProvider(16), HashProvider(24)]
NEAR_TIE = 1e-5  # cosines this close may come in either order from the two searches

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("capture"), texts, st.sampled_from(["episodic", "semantic"])),
        st.tuples(st.just("update"), st.integers(0, 50), texts),
        st.tuples(st.just("append"), st.integers(0, 50), texts),
        st.tuples(st.just("forget"), st.integers(0, 50)),
        st.tuples(st.just("forget rolled back"), st.integers(0, 50)),
        st.tuples(st.just("capture unembedded"), texts),
        st.tuples(
            st.just("backfill"),
        ),
        st.tuples(st.just("import"), st.lists(texts, min_size=1, max_size=3)),
        st.tuples(
            st.just("rebind"),
        ),
        st.tuples(
            st.just("reopen"),
        ),
    ),
    max_size=25,
)


def _ids(ws: Workspace) -> list[str]:
    return [row[0] for row in ws.conn.execute("SELECT id FROM entries ORDER BY seq")]


def _pick(ws: Workspace, number: int) -> str | None:
    ids = _ids(ws)
    return ids[number % len(ids)] if ids else None


def _import(ws: Workspace, folder: Path, contents: list[str], round_no: int) -> None:
    """An export of another workspace holding `contents`, imported here (entries come in
    without vectors: the binding's backfill embeds them)."""
    with Workspace(folder / f"source-{round_no}.db") as source:
        for content in contents:
            source.capture(content)
        lines = list(export_lines(source.conn, now_ms=source.clock.now_ms()))
    import_lines(ws, lines, checkpoint_key=f"round-{round_no}")


def _apply(ws: Workspace, folder: Path, op: tuple, round_no: int) -> Workspace:
    name = op[0]
    if name == "capture":
        ws.capture(op[1], kind=op[2])
    elif name in ("update", "append", "forget", "forget rolled back"):
        entry_id = _pick(ws, op[1])
        if entry_id is None:
            return ws
        if name == "update":
            ws.update(entry_id, op[2])
        elif name == "append":
            ws.append(entry_id, op[2])
        elif name == "forget":
            ws.forget(entry_id)
        else:
            try:
                with ws.transaction() as conn:
                    conn.execute("DELETE FROM entries WHERE id = ?", (entry_id,))
                    raise RuntimeError("rolled back")
            except RuntimeError:
                pass
    elif name == "capture unembedded":  # the provider away: the entry waits for a backfill
        provider, ws.vectors.provider = ws.vectors.provider, None
        try:
            ws.capture(op[1])
        finally:
            ws.vectors.provider = provider
    elif name == "backfill":
        ws.vectors.backfill()
    elif name == "import":
        _import(ws, folder, op[1], round_no)
    elif name == "rebind":
        other = PROVIDERS[1] if ws.vectors.provider is PROVIDERS[0] else PROVIDERS[0]
        ws.enable_vectors(other, replace=True)
    elif name == "reopen":
        provider = ws.vectors.provider
        ws.close()
        ws = Workspace(ws.path, embedder=provider)
    return ws


def _same_ranking(resident: list[tuple[int, float]], durable: list[tuple[int, float]]) -> None:
    assert len(resident) == len(durable)
    assert np.allclose([c for _, c in resident], [c for _, c in durable], atol=NEAR_TIE)
    # the same entries, except that near-equal cosines (two entries with one text) may come in
    # either order, and either may be the one left out at the k-th place
    durable_cosine = dict(durable)
    for seq, cosine in resident:
        if seq in durable_cosine:
            assert abs(durable_cosine[seq] - cosine) <= NEAR_TIE, (seq, resident, durable)
        else:
            assert abs(durable[-1][1] - cosine) <= NEAR_TIE, (seq, resident, durable)


def _check(ws: Workspace, rng: np.random.Generator) -> None:
    index, conn = ws.vectors.index, ws.conn
    stored = dict(conn.execute(f"SELECT rowid, embedding FROM {table.VEC_TABLE}").fetchall())
    assert len(index) == len(stored)
    for seq, data in stored.items():
        assert np.allclose(index.vector(seq), np.frombuffer(data, dtype=np.float32), atol=1e-6)
    restrict = "SELECT e.seq FROM entries e WHERE e.kind = ?"
    for _ in range(3):
        query = rng.standard_normal(index.dim).astype(np.float32)
        query /= np.linalg.norm(query)
        for k in (1, 5, 50):
            _same_ranking(index.search(conn, query, k), table.knn(conn, query, k))
            _same_ranking(
                index.search(conn, query, k, restrict, ["episodic"]),
                table.knn(conn, query, k, restrict, ["episodic"]),
            )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations, st.integers(0, 2**32 - 1))
def test_resident_knn_answers_as_sqlite_vec_after_any_writes(ops, seed):
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ws = Workspace(folder / "ws.db", embedder=PROVIDERS[0])
        try:
            for round_no, op in enumerate(ops):
                ws = _apply(ws, folder, op, round_no)
                _check(ws, rng)
        finally:
            ws.close()


def test_resident_index_is_rebuilt_from_the_file_on_open(tmp_path):
    with Workspace(tmp_path / "ws.db", embedder=PROVIDERS[0]) as ws:
        for word in WORDS:
            ws.capture(f"notes about {word}")
    with Workspace(tmp_path / "ws.db", embedder=PROVIDERS[0]) as reopened:
        assert len(reopened.vectors.index) == len(WORDS)
        _check(reopened, np.random.default_rng(0))
