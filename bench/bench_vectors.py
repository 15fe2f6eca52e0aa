"""Vector-binding parts of the retrieval benchmark (`bench_retrieval --vectors minilm`).

  dense-only      the vector arm alone: sqlite-vec KNN over the same workspace file, top 10
  dense+feedback  the vector arm with its one feedback round taken on its own top 10 (what the
                  hybrid's feedback would do with no lexical arm): how much is feedback alone
  hybrid          our full recall with the binding on (keyword + graph + vector, fused, reranked)
  hybrid, MMR off the same with MMR's λ at 1: fusion + rerank factors only
plus the provider's embed throughput and capture latency with the binding on versus off.
With a second provider (`--compare-vectors`), each held-out conversation is also recalled with
workspaces bound to it: the hybrid's R@10 with either encoder beside zero-binding, and the time
each takes to embed a query, both in the same run.
Corpus/query vectors are cached under --embed-cache (a temp dir, never the repo) so reruns do not
re-embed; the throughput row always embeds a fresh sample.
"""

from __future__ import annotations

import functools
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from minisphere.engine.retrieval.sql_filters import Prefilter
from minisphere.engine.workspace import Workspace

from .common import p50, percentile
from .embed_cache import cached_embed

DEFAULT_CACHE = Path(tempfile.gettempdir()) / "minisphere-embed-cache"
THROUGHPUT_SAMPLE = 128  # corpus texts embedded fresh for the sentences/s row
CAPTURE_SAMPLES = 100  # captures timed per configuration
CAPTURE_WARMUP = 5
CAPTURE_NOTE_CHARS = 200  # captured notes: agent-note sized cuts of corpus passages
# A second encoder is no worse than the first if its hybrid trails by at most this much R@10 on
# the mean over the held-out folds, and by at most the second on any one fold.
ENCODER_MEAN_TOLERANCE = 0.005
ENCODER_FOLD_TOLERANCE = 0.01
# hybrid settings compared with the shipped ones (tuning constant -> values)
SENSITIVITY = {
    "HYBRID_LEXICAL_MARGIN_FLOOR": (0.25, 0.4),
    "HYBRID_LEXICAL_SLOPE": (1.0, 2.0),
    "HYBRID_LEXICAL_MAX": (0.4, 0.8),
    "VECTOR_FEEDBACK_WEIGHT": (0.0, 1.0),
}


class CachedProvider:
    """Wraps a provider with a text -> vector table filled from the embedding cache."""

    def __init__(self, provider, table: dict[str, np.ndarray]):
        self.inner, self.table = provider, table
        self.name, self.dim = provider.name, provider.dim

    def embed(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.table]
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing)):
                self.table[text] = vector
        return (
            np.stack([self.table[t] for t in texts])
            if texts
            else np.zeros((0, self.dim), np.float32)
        )


def make(name: str):
    from minisphere.engine.embedding import make_provider

    return make_provider({"provider": name})


def vector_table(
    provider, corpus_texts: list[str], query_texts: list[str], cache_dir, label: str
) -> dict[str, np.ndarray]:
    """text -> vector for a set's corpus and queries, from the embedding cache (filled once)."""
    corpus_vectors, _ = cached_embed(provider, corpus_texts, cache_dir, label + "-corpus")
    query_vectors, _ = cached_embed(provider, query_texts, cache_dir, label + "-queries")
    table = dict(zip(corpus_texts, corpus_vectors))
    table.update(zip(query_texts, query_vectors))
    return table


def bind(ws: Workspace, cached: CachedProvider, label: str) -> str:
    """Bind the workspace (backfill through the cached provider); returns a note."""
    started = time.perf_counter()
    report = ws.enable_vectors(cached, progress_callback=_progress(label))
    return (
        f"{label}: {report['embedded']} vectors backfilled into sqlite-vec in "
        f"{time.perf_counter() - started:.1f} s (embeddings from the cache)"
    )


def _progress(label: str):
    def report(done: int, total: int) -> None:
        if total and (done == total or done % 1000 < 64):
            print(f"  backfill {label}: {done}/{total}", flush=True)

    return report


def methods(ws: Workspace, provider) -> dict:
    from minisphere.engine.vectors.arm import VectorArm

    def dense(query: str) -> list[str]:
        return [h.id for h in VectorArm(provider.embed([query])[0]).hits(ws.conn, Prefilter())[:10]]

    def dense_feedback(query: str) -> list[str]:
        arm = VectorArm(provider.embed([query])[0])
        head = [h.id for h in arm.hits(ws.conn, Prefilter())[:10]]
        return [h.id for h in arm.refine(ws.conn, Prefilter(), head)[:10]]

    def hybrid_without_mmr(query: str) -> list[str]:
        """Fusion + rerank factors only: isolates the fusion from MMR's diversity trade-off."""
        from minisphere.engine.retrieval import recall as pipeline

        original = pipeline.mmr
        pipeline.mmr = functools.partial(original, lam=1.0)
        try:
            return [i["id"] for i in ws.recall(query, topK=10)["items"]]
        finally:
            pipeline.mmr = original

    return {
        "dense-only": dense,
        "dense+feedback": dense_feedback,
        "hybrid": lambda q: [i["id"] for i in ws.recall(q, topK=10)["items"]],
        "hybrid, MMR off": hybrid_without_mmr,
    }


def sensitivity(reset, measure) -> list[list]:
    """hybrid (nDCG@10, R@10) with each listed setting moved, one at a time; `measure()` runs
    every question once, `reset()` clears recall counts before each run."""
    from minisphere.engine.retrieval import tuning as T

    reset()
    rows = [["shipped", *measure()]]
    for name, values in SENSITIVITY.items():
        shipped = getattr(T, name)
        try:
            for value in values:
                setattr(T, name, value)
                reset()
                rows.append([f"{name} = {value:g} (shipped {shipped:.3g})", *measure()])
        finally:
            setattr(T, name, shipped)
    return rows


def throughput(provider, texts: list[str]) -> list:
    sample = texts[:THROUGHPUT_SAMPLE]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    provider.embed(sample)
    seconds = time.perf_counter() - started
    threads = (
        os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or "default"
    )
    return [
        f"embed ({provider.name}), BLAS threads {threads}, load avg {load:.1f} on {os.cpu_count()} cores",
        f"{len(sample)} texts",
        len(sample) / seconds,
        "sentences/s",
    ]


def _capture_latency(ws: Workspace, texts: list[str], prefetch: bool) -> list[float]:
    samples = []
    for i, text in enumerate(texts):
        call = [("capture", {"content": text})]
        # prepared: embedded before the write is queued, as the workspace actor does; time the
        # write only
        prepared = ws.prepare(call) if prefetch else None
        t0 = time.perf_counter()
        ws.run_batch(call, prepared=prepared)
        if i >= CAPTURE_WARMUP:
            samples.append((time.perf_counter() - t0) * 1000)
    return samples


def capture_rows(provider, texts: list[str]) -> list[list]:
    """Capture latency (ms, synchronous=FULL), one fresh workspace per configuration, same notes
    (the first CAPTURE_WARMUP captures of each are not timed)."""
    texts = texts[: CAPTURE_SAMPLES + CAPTURE_WARMUP]
    rows = []
    configs = [
        ("binding off", None, False),
        (f"binding on ({provider.name})", provider, False),
        ("binding on, prefetched", provider, True),
    ]
    for label, embedder, prefetch in configs:
        with (
            tempfile.TemporaryDirectory() as tmp,
            Workspace(Path(tmp) / "cap.db", embedder=embedder) as ws,
        ):
            samples = _capture_latency(
                ws, [f"note {i}: {t}" for i, t in enumerate(texts)], prefetch
            )
        rows.append(
            ["capture " + label, f"{len(samples)} captures", p50(samples), percentile(samples, 99)]
        )
    return rows


def cache_dir(arg: str | None) -> Path:
    return Path(arg or os.environ.get("MINISPHERE_EMBED_CACHE") or DEFAULT_CACHE)


def report_sections(provider, data_paths: list[str], sensitivity: list[list]) -> list[str]:
    """Markdown sections: weight sensitivity, embed throughput, capture latency on vs off."""
    from . import beir
    from .common import table

    corpus = (
        [text for _, text in beir.load(data_paths[0]).corpus]
        if data_paths
        else [f"synthetic note {i} about topic {i % 17} and its details" for i in range(1000)]
    )
    sections = []
    if sensitivity:
        sections.append(
            "## Hybrid: sensitivity to its settings (one moved at a time)\n\n"
            + table(["set", "setting", "nDCG@10", "R@10"], sensitivity)
        )
    sections.append(
        "## Vector binding: embed throughput\n\n"
        + table(
            ["what", "sample", "value", "unit"], [throughput(provider, corpus[-THROUGHPUT_SAMPLE:])]
        )
    )
    notes = [text[:CAPTURE_NOTE_CHARS] for text in corpus[: CAPTURE_SAMPLES + CAPTURE_WARMUP]]
    sections.append(
        "## Capture latency, binding on vs off (ms, synchronous=FULL, one capture per "
        "commit; prefetched = embedded before the write, as the actor's queue allows)\n\n"
        + table(["configuration", "sample", "p50 ms", "p99 ms"], capture_rows(provider, notes))
    )
    return sections


def query_embed_ms(providers: list, texts: list[str]) -> list[list[float]]:
    """ms to embed each text alone, per provider; the providers take turns text by text, so
    both see the same load on shared cores (their first call, untimed, warms them up)."""
    samples: list[list[float]] = [[] for _ in providers]
    for provider in providers:
        provider.embed(texts[:1])
    for text in texts:
        for out, provider in zip(samples, providers):
            started = time.perf_counter()
            provider.embed([text])
            out.append((time.perf_counter() - started) * 1000)
    return samples


ENCODER_HEADERS = [
    "held-out conversation",
    "questions",
    "zero R@10",
    "hybrid R@10 first",
    "hybrid R@10 second",
    "Δ R@10 second − first",
    "Δ nDCG@10 second − first",
    "Δ R@10 second − zero",
    "query ms first",
    "query ms second",
    "ms second / first",
]


def encoder_section(bench, other_bench, providers: list) -> str:
    """Per held-out conversation: zero-binding R@10 and the hybrid's with each encoder (bench:
    zero and bound with the first; other_bench: bound with the second), and each encoder's
    query embedding time (fresh, one query at a time, the encoders interleaved)."""
    from . import folds
    from .common import table

    first, second = (p.name for p in providers)
    zero, hybrid, other = (
        bench.evaluate({}, False),
        bench.evaluate({}, True),
        other_bench.evaluate({}, True),
    )
    questions = {c.id: [q.text for q in c.questions] for c in bench.data.conversations}
    rows, all_ms = [], [[], []]
    for cid in bench.conversations:
        ms = query_embed_ms(
            [p.inner if isinstance(p, CachedProvider) else p for p in providers], questions[cid]
        )
        for total, part in zip(all_ms, ms):
            total += part
        rows.append(_encoder_row(cid, [folds.of(o, [cid]) for o in (zero, hybrid, other)], ms))
    mean_row = _encoder_mean_row(rows, all_ms)
    worst = min(r[5] for r in rows)
    verdict = mean_row[5] >= -ENCODER_MEAN_TOLERANCE and worst >= -ENCODER_FOLD_TOLERANCE
    worst_zero = min(r[7] for r in rows)
    return (
        f"## Leave-one-conversation-out: the hybrid with {first} against {second}\n\n"
        f"First: {first}; second: {second}. The same shipped settings on each held-out "
        f"conversation; the second's workspaces are captured and recalled with that encoder "
        f"only. Query ms: each question embedded fresh, alone, the two encoders taking turns "
        f"(p50 per fold).\n\n"
        + table(ENCODER_HEADERS, [*rows, mean_row])
        + f"\n\n{second} no worse than {first} (mean Δ R@10 ≥ −{ENCODER_MEAN_TOLERANCE}, no fold "
        f"below −{ENCODER_FOLD_TOLERANCE}): mean {mean_row[5]:+.4f}, worst fold {worst:+.4f}, "
        f"{'met' if verdict else 'missed'}. {second}'s hybrid against zero-binding: mean Δ R@10 "
        f"{mean_row[7]:+.4f}, worst fold {worst_zero:+.4f}. Query embedding {second} / {first}: "
        f"{mean_row[10]:.2f} (p50 over all {mean_row[1]} questions)."
    )


def _encoder_mean_row(rows: list[list], all_ms: list[list[float]]) -> list:
    """The folds' rows averaged (questions summed), query ms as p50 over every question."""
    n = len(rows)
    return [
        "mean over folds",
        sum(r[1] for r in rows),
        *[sum(r[i] for r in rows) / n for i in range(2, 8)],
        p50(all_ms[0]),
        p50(all_ms[1]),
        p50(all_ms[1]) / p50(all_ms[0]),
    ]


def _encoder_row(cid: str, outcomes: list, ms: list[list[float]]) -> list:
    from . import folds

    (zr, fr, sr), (_, fn, sn) = (
        [folds.mean(o, field) for o in outcomes] for field in ("recall", "ndcg")
    )
    return [
        cid,
        len(outcomes[0]),
        zr,
        fr,
        sr,
        sr - fr,
        sn - fn,
        sr - zr,
        p50(ms[0]),
        p50(ms[1]),
        p50(ms[1]) / p50(ms[0]),
    ]
