"""Engine benchmark: capture rate and getEntry / listRecent latency, next to raw SQLite.

    python -m bench.bench_engine --sizes 1000,10000,100000
    python -m bench.bench_engine --sizes 1000 --synchronous FULL --no-save

For every size N, in the same run and on the same disk:

  engine  the engine's Workspace on a fresh file (validation, normalization, dedup lookup,
          volatility inference, savepoints in batches, result dicts)
  raw     the same pysqlite3 module on another fresh file with the same table shape
          (entries with the same columns and indexes, tags, the external-content FTS5 table and
          its insert trigger) and plain INSERT / SELECT statements, no engine code

Rows:
  capture, 1 txn/entry      one call (one BEGIN IMMEDIATE..COMMIT) per entry, N entries from an
                            empty file; skipped above --single-max (the N-entry file is then
                            filled by run_batch only)
  capture, run_batch x256   group commit: 256 captures per transaction, N entries from empty
  getEntry p50/p99          random existing ids on the N-entry file (from the batch fill)
  listRecent(n=20) p50/p99  newest 20 entries with their tags

The ratio column is engine/raw: for rates below 1 means the engine is slower, for latencies
above 1 means the engine is slower. Texts are synthetic and deterministic (seeded random words).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

from minisphere.engine import db
from minisphere.engine.db import sqlite3
from minisphere.engine.workspace import Workspace

from .common import p50, percentile, save_report, table

BATCH_SIZE = 256
TAG_VOCABULARY = [f"topic-{i:02d}" for i in range(50)]

RAW_SCHEMA = """
CREATE TABLE entries (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, content TEXT NOT NULL, source TEXT,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    recall_count INTEGER NOT NULL DEFAULT 0, importance_score REAL NOT NULL DEFAULT 0,
    claim_tag TEXT, evidence_ref TEXT, status TEXT NOT NULL, kind TEXT NOT NULL,
    volatility TEXT NOT NULL, unclassified INTEGER NOT NULL DEFAULT 0, content_hash TEXT NOT NULL);
CREATE INDEX entries_status ON entries(status);
CREATE INDEX entries_kind ON entries(kind);
CREATE INDEX entries_volatility ON entries(volatility);
CREATE INDEX entries_created ON entries(created_at);
CREATE INDEX entries_updated ON entries(updated_at);
CREATE INDEX entries_hash ON entries(content_hash);
CREATE TABLE tags (entry_id TEXT NOT NULL REFERENCES entries(id) ON DELETE CASCADE,
                   tag TEXT NOT NULL, PRIMARY KEY (entry_id, tag)) WITHOUT ROWID;
CREATE INDEX tags_by_tag ON tags(tag, entry_id);
CREATE VIRTUAL TABLE entries_fts USING fts5(content, content = 'entries', content_rowid = 'seq',
                                            tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TRIGGER entries_fts_insert AFTER INSERT ON entries BEGIN
    INSERT INTO entries_fts(rowid, content) VALUES (new.seq, new.content);
END;
"""
RAW_COLUMNS = (
    "id, content, source, created_at, updated_at, recall_count, importance_score, "
    "claim_tag, evidence_ref, status, kind, volatility"
)
RAW_INSERT = (
    "INSERT INTO entries(id, content, source, created_at, updated_at, importance_score,"
    " claim_tag, evidence_ref, status, kind, volatility, unclassified, content_hash) "
    "VALUES (?, ?, NULL, ?, ?, 0, NULL, NULL, 'canonical', 'semantic', 'durable', 1, ?)"
)


# ---- synthetic data --------------------------------------------------------------------------


def make_vocabulary(rng: random.Random, size: int = 6000) -> list[str]:
    syllables = [
        "ka",
        "lo",
        "mi",
        "ner",
        "sta",
        "vu",
        "qui",
        "dre",
        "pol",
        "zan",
        "ti",
        "mor",
        "el",
        "an",
        "ost",
        "ry",
        "gle",
        "bas",
        "cor",
        "fen",
        "ux",
        "wi",
        "ha",
        "jet",
    ]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))))
    common = ["the", "a", "is", "of", "to", "and", "for", "on", "with", "we", "decided", "uses"]
    return sorted(words) + common * 40


def make_items(n: int, seed: int) -> list[tuple[str, list[str]]]:
    """n short texts (6-24 words) with 0-3 tags each; a counter keeps every text distinct."""
    rng = random.Random(seed)
    vocabulary = make_vocabulary(rng)
    items = []
    for i in range(n):
        words = rng.choices(vocabulary, k=rng.randint(6, 24))
        text = " ".join(words).capitalize() + f" (note {i})"
        items.append((text, rng.sample(TAG_VOCABULARY, rng.randint(0, 3))))
    return items


# ---- the two sides -----------------------------------------------------------------------
# Both sides are filled and read in lockstep (a chunk or a call of one, then of the other), so
# noise from other work on the machine lands on both alike.


def raw_open(path: Path, synchronous: str):
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("BEGIN IMMEDIATE")
    for statement in db.split_statements(RAW_SCHEMA):
        conn.execute(statement)
    conn.execute("COMMIT")
    return conn


def raw_insert_one(conn, text: str, tags: list[str]) -> None:
    entry_id = str(uuid.uuid4())
    now_ms = time.time_ns() // 1_000_000
    conn.execute(
        RAW_INSERT, (entry_id, text, now_ms, now_ms, hashlib.sha256(text.encode()).hexdigest())
    )
    if tags:
        conn.executemany(
            "INSERT INTO tags(entry_id, tag) VALUES (?, ?)", [(entry_id, tag) for tag in tags]
        )


def raw_capture_each(conn, chunk) -> None:
    for text, tags in chunk:
        conn.execute("BEGIN IMMEDIATE")
        raw_insert_one(conn, text, tags)
        conn.execute("COMMIT")


def raw_capture_batch(conn, chunk) -> None:
    conn.execute("BEGIN IMMEDIATE")
    for text, tags in chunk:
        raw_insert_one(conn, text, tags)
    conn.execute("COMMIT")


def engine_capture_each(ws: Workspace, chunk) -> None:
    for text, tags in chunk:
        if ws.capture(text, tags=tags)["outcome"] != "stored":
            raise RuntimeError("a synthetic text was not stored")


def engine_capture_batch(ws: Workspace, chunk) -> None:
    outcomes = ws.run_batch([("capture", {"content": text, "tags": tags}) for text, tags in chunk])
    if not all(ok and r["outcome"] == "stored" for ok, r in outcomes):
        raise RuntimeError(f"a batched capture was not stored: {outcomes[:3]}")


def fill_both(ws: Workspace, conn, items, engine_fn, raw_fn) -> tuple[float, float]:
    """Fill both sides chunk by chunk, alternating; returns (engine, raw) entries per second."""
    engine_s = raw_s = 0.0
    for offset in range(0, len(items), BATCH_SIZE):
        chunk = items[offset : offset + BATCH_SIZE]
        t0 = time.perf_counter()
        raw_fn(conn, chunk)
        t1 = time.perf_counter()
        engine_fn(ws, chunk)
        t2 = time.perf_counter()
        raw_s += t1 - t0
        engine_s += t2 - t1
    return len(items) / engine_s, len(items) / raw_s


def raw_get_entry(conn, entry_id: str):
    row = conn.execute(f"SELECT {RAW_COLUMNS} FROM entries WHERE id = ?", (entry_id,)).fetchone()
    tags = [
        t
        for (t,) in conn.execute(
            "SELECT tag FROM tags WHERE entry_id = ? ORDER BY tag", (entry_id,)
        )
    ]
    return row, tags


def raw_list_recent(conn, n: int = 20):
    rows = conn.execute(
        f"SELECT {RAW_COLUMNS} FROM entries ORDER BY created_at DESC, seq DESC LIMIT ?", (n,)
    ).fetchall()
    ids = [r[0] for r in rows]
    marks = ",".join("?" * len(ids))
    tags = conn.execute(
        f"SELECT entry_id, tag FROM tags WHERE entry_id IN ({marks}) ORDER BY tag", ids
    ).fetchall()
    return rows, tags


def latencies_us(engine_fn, raw_fn, engine_args, raw_args, warmup: int = 50):
    """Alternate engine and raw calls; per-call latencies in microseconds for each side."""
    for e_args, r_args in list(zip(engine_args, raw_args))[:warmup]:
        engine_fn(*e_args)
        raw_fn(*r_args)
    engine_samples, raw_samples = [], []
    for e_args, r_args in zip(engine_args, raw_args):
        t0 = time.perf_counter_ns()
        engine_fn(*e_args)
        t1 = time.perf_counter_ns()
        raw_fn(*r_args)
        t2 = time.perf_counter_ns()
        engine_samples.append((t1 - t0) / 1000)
        raw_samples.append((t2 - t1) / 1000)
    return engine_samples, raw_samples


def run_size(n: int, args, workdir: Path) -> list[list]:
    items = make_items(n, seed=args.seed + n)
    label = f"{n:,}"
    rows = [single_capture_row(n, args, workdir, items, label)]
    return rows + batch_fill_and_read_rows(n, args, workdir, items, label)


def single_capture_row(n: int, args, workdir: Path, items, label: str) -> list:
    """One transaction per entry; above --single-max only a 'skipped' row."""
    if n > args.single_max:
        return [
            label,
            "capture, 1 txn/entry (entries/s)",
            "skipped: batch fill only",
            "skipped",
            "-",
        ]
    ws = Workspace(workdir / f"engine-each-{n}.db", synchronous=args.synchronous)
    conn = raw_open(workdir / f"raw-each-{n}.db", args.synchronous)
    try:
        engine_rate, raw_rate = fill_both(ws, conn, items, engine_capture_each, raw_capture_each)
    finally:
        ws.close()
        conn.close()
    return [
        label,
        "capture, 1 txn/entry (entries/s)",
        engine_rate,
        raw_rate,
        engine_rate / raw_rate,
    ]


def batch_fill_and_read_rows(n: int, args, workdir: Path, items, label: str) -> list[list]:
    """The run_batch fill, then getEntry and listRecent timed on the N-entry files it made."""
    ws = Workspace(workdir / f"engine-batch-{n}.db", synchronous=args.synchronous)
    conn = raw_open(workdir / f"raw-batch-{n}.db", args.synchronous)
    try:
        engine_rate, raw_rate = fill_both(ws, conn, items, engine_capture_batch, raw_capture_batch)
        rows: list[list] = [
            [
                label,
                f"capture, run_batch x{BATCH_SIZE} (entries/s)",
                engine_rate,
                raw_rate,
                engine_rate / raw_rate,
            ]
        ]
        if ws.get_count()["count"] != n:
            raise RuntimeError("the engine workspace does not hold every entry")
        read_samples = read_latencies(ws, conn, n, args)
    finally:
        ws.close()
        conn.close()
    for name, engine_s, raw_s in read_samples:
        for pct_name, pick in [("p50", p50), ("p99", lambda s: percentile(s, 99))]:
            e, r = pick(engine_s), pick(raw_s)
            rows.append([label, f"{name} {pct_name} (µs)", e, r, e / r])
    return rows


def read_latencies(ws: Workspace, conn, n: int, args) -> list[tuple[str, list, list]]:
    """(read, engine µs, raw µs) for getEntry on random existing ids and for listRecent."""
    rng = random.Random(args.seed)
    engine_ids = [r[0] for r in ws.conn.execute("SELECT id FROM entries ORDER BY seq")]
    raw_ids = [r[0] for r in conn.execute("SELECT id FROM entries ORDER BY seq")]
    picks = [rng.randrange(n) for _ in range(args.lookups)]
    get_e, get_r = latencies_us(
        ws.get_entry,
        raw_get_entry,
        [(engine_ids[i],) for i in picks],
        [(conn, raw_ids[i]) for i in picks],
    )
    recent_e, recent_r = latencies_us(
        lambda: ws.list_recent(n=20),
        raw_list_recent,
        [()] * args.lookups,
        [(conn,)] * args.lookups,
    )
    return [("getEntry", get_e, get_r), ("listRecent(n=20)", recent_e, recent_r)]


def parse_args(argv: list[str] | None):
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_engine",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--sizes",
        default="1000,10000,100000",
        help="comma-separated entry counts (default: %(default)s)",
    )
    parser.add_argument(
        "--synchronous",
        choices=["NORMAL", "FULL"],
        default="NORMAL",
        help="SQLite synchronous mode for both sides (default: %(default)s)",
    )
    parser.add_argument(
        "--single-max",
        type=int,
        default=10_000,
        help="largest size whose capture is also timed one transaction per "
        "entry; larger sizes are filled by run_batch only (default: "
        "%(default)s)",
    )
    parser.add_argument(
        "--lookups",
        type=int,
        default=2000,
        help="timed getEntry / listRecent calls per size (default: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="where the temporary database files go (default: system temp)",
    )
    parser.add_argument(
        "--no-save", action="store_true", help="print only; do not write bench/results/engine.md"
    )
    return parser.parse_args(argv)


def run_sizes(sizes: list[int], args) -> list[list]:
    all_rows: list[list] = []
    workdir = Path(tempfile.mkdtemp(prefix="bench-engine-", dir=args.dir))
    try:
        for n in sizes:
            t0 = time.perf_counter()
            print(f"size {n:,}: running…", file=sys.stderr, flush=True)
            all_rows += run_size(n, args, workdir)
            print(
                f"size {n:,}: done in {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True
            )
            for path in workdir.iterdir():  # keep the disk footprint to one size at a time
                path.unlink()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return all_rows


def notes_text(args, started: float, load_before: float) -> str:
    return (
        f"SQLite {sqlite3.sqlite_version} via pysqlite3, WAL, synchronous={args.synchronous} on "
        f"both sides; {BATCH_SIZE} captures per run_batch / raw transaction; {args.lookups} timed "
        f"reads per latency row (after 50 warm-up calls); sizes above {args.single_max:,} are "
        "filled with run_batch only (the one-transaction-per-entry row is skipped).\n"
        "Raw side: same columns, indexes, tags table and external-content FTS5 table + insert "
        "trigger, plain INSERT/SELECT (it still makes a uuid4 and a sha256 per entry; no "
        "validation, normalization, dedup lookup or volatility inference). Raw getEntry reads "
        "the row and its tags; the engine also counts revisions and edges and lists the latest "
        "revisions. Ratio = engine/raw: below 1 on rates and above 1 on latencies is the "
        "engine's overhead.\n"
        f"Total wall time: {time.perf_counter() - started:.0f}s on {os.cpu_count()} CPUs; 1-minute "
        f"load average {load_before:.2f} at the start, {os.getloadavg()[0]:.2f} at the end "
        "(the machine is shared: p99 values are sensitive to other work)."
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]

    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    all_rows = run_sizes(sizes, args)

    headers = ["entries", "measure", "engine", "raw SQLite", "engine/raw"]
    body = table(headers, all_rows)
    notes = notes_text(args, started, load_before)
    print(body)
    print()
    print(notes)
    if not args.no_save:
        path = save_report("engine", body + "\n\n" + notes)
        print(f"\nsaved to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
