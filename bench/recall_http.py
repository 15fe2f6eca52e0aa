"""Recall's own cost over HTTP: recall against getCount on the same workspace of the real
service, in one run, stage by stage.

    flock /tmp/ray.lock python -m bench.recall_http --conversations ../shared/data/locomo_dev
    (`--providers minilm-int8,minilm` adds the float model; `bench_retrieval --conversations ...
    --http` adds this section to its report)

The service is started as the HTTP benchmarks start it (bench/local_service.py: Ray + Serve,
defaults, a fresh data folder). Each dev conversation gets a workspace with no binding and one
per provider asked for, born with that binding (default `minilm-int8`, the default binding;
embedding through the cluster's shared embedder actor). The turns are captured over HTTP as bench/locomo.py captures
them (episodic, tag session-<n>, consecutive turns linked `follows`); captures go a few at a
time, so turns within one window may get their timestamps out of order (the cost is what is
measured here, not quality: bench_retrieval scores quality in process).

Timed: each question once per workspace (so a bound recall always embeds its query: the
binding caches query vectors by text), the calls interleaved question by question with
their order rotated, one sequential client. Reported: client-side p50/p99, recall p50 over
getCount p50 on the same workspace, the Server-Timing parts, and the answer's own stage timings
(`timings`). A bound recall's query embedding is sent by the ingress as the call arrives (once
it knows the workspace's embedder: the Server-Timing part `query-ahead`, counted per run), or
else by the workspace actor, and runs in the embedder actor beside the lexical stages: what the
recall still waits for is the stage `embedWait` (booked apart from the KNN's `vector`), and the
embedding's latency from the call's arrival at the actor to vector in hand is reported beside
the stages (`queryEmbed`, overlapping them: not summed).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from collections import defaultdict

import httpx

from minisphere.http.handling import QUERY_AHEAD_PART

from . import locomo
from .bench_service import server_timing
from .common import machine_note, p50, percentile, publish_report, table
from .recall_cost import STAGES

ADMIN_TOKEN = "bench-recall-http-admin-0123456789"
DEFAULT_PROVIDERS = ["minilm-int8"]
LOAD_CONCURRENCY = 16  # captures (and links) in flight while loading a workspace
WARMUP_CALLS = 20  # untimed calls per workspace and method, with texts no question has
TOP_K = 10
ZERO = "zero-binding"
ZERO_TARGET = 1.5  # recall p50 / getCount p50 on the same workspace, at most
BOUND_TARGET = 2.0
OUTSIDE = "outsideMs"
OVERLAPPED = "queryEmbedMs"  # runs beside the stages: reported, never added to them
STAGE_LABELS = {
    "embedWaitMs": "waiting for the query vector (what the embedding outlasts the lexical stages by)",
    OUTSIDE: "engine part outside the stages (parsing, starting the query embedding, the read "
    "transaction)",
    OVERLAPPED: "query embedding, started to vector in hand (beside the stages above: not summed)",
}
PARTS = ["ingress", "rpc", "actor", "queue", "engine"]


async def _load(url: str, ws: str, headers: dict, conversation: locomo.Conversation) -> None:
    """The turns captured over HTTP (a window of LOAD_CONCURRENCY at a time, in order
    otherwise), then consecutive turns of a session linked `follows` newer -> older."""
    limits = httpx.Limits(max_connections=LOAD_CONCURRENCY)
    async with httpx.AsyncClient(
        base_url=url, timeout=300, limits=limits, headers=headers
    ) as client:

        async def post(method: str, body: dict) -> dict:
            response = await client.post(f"/v1/w/{ws}/{method}", json=body)
            response.raise_for_status()
            return response.json()

        flat = conversation.turns
        entry_of: dict[str, str] = {}
        for start in range(0, len(flat), LOAD_CONCURRENCY):
            chunk = flat[start : start + LOAD_CONCURRENCY]
            answers = await asyncio.gather(
                *(post("capture", locomo.turn_capture(number, text)) for number, _, text in chunk)
            )
            for (_, turn_id, _), answer in zip(chunk, answers):
                entry_of[turn_id] = answer.get("id") or answer["matchId"]
        links = [
            {
                "src": entry_of[newer],
                "dst": entry_of[older],
                "type": "follows",
                "provenance": "system",
                "weight": locomo.FOLLOWS_WEIGHT,
            }
            for _, turns in conversation.sessions
            for (older, _), (newer, _) in itertools.pairwise(turns)
            if entry_of[newer] != entry_of[older]
        ]
        for start in range(0, len(links), LOAD_CONCURRENCY):
            await asyncio.gather(
                *(post("link", body) for body in links[start : start + LOAD_CONCURRENCY])
            )


def _workspace(client: httpx.Client, admin: dict, ws_id: str, blueprint: dict | None) -> dict:
    body = {"id": ws_id, **({"blueprint": blueprint} if blueprint else {})}
    created = client.post("/v1/workspaces", headers=admin, json=body)
    created.raise_for_status()
    return {"Authorization": f"Bearer {created.json()['token']}"}


def blueprint(provider: str) -> dict:
    return {"bindings": {"vector": {"provider": provider}}}


def label(provider: str | None) -> str:
    return f"{provider} binding" if provider else ZERO


def targets(providers: list[str]) -> dict[str, tuple[str, float]]:
    """recall call -> (the getCount call it is held against, the most it may take of it)."""
    return {
        f"recall, {label(p)}": (f"getCount, {label(p)}", BOUND_TARGET if p else ZERO_TARGET)
        for p in [None, *providers]
    }


def _embedder_work(provider: str) -> tuple[float, int, int]:
    """(forward-pass seconds, passes, texts) the cluster's embedder of `provider` has run so
    far: read around the questions, it splits a recall's wait for its query vector into the
    pass itself and the rest (the calls to and from it, waiting for a core)."""
    import ray

    from actors.embedder.actor import embedder_name
    from minisphere.control.blueprints import parse_blueprint

    spec = parse_blueprint(blueprint(provider)).bindings.vector.embedder_spec()
    embedder = ray.get_actor(embedder_name(spec))  # the bound workspaces made it
    info = ray.get(embedder.info.remote(), timeout=60)
    return info["embedSeconds"], info["batches"], info["texts"]


def measure(url: str, admin: dict, data: locomo.ConversationSet, providers: list[str]) -> dict:
    """{"samples": {call: [client ms]}, "parts": {call: {part: [ms]}},
    "stages": {call: {stage: [ms]}}, "load_s": s, "questions": n, "embedder": {provider:
    [forward-pass seconds, passes, texts] while the questions were asked}}."""
    samples: dict[str, list[float]] = defaultdict(list)
    ahead: dict[str, int] = defaultdict(int)  # recalls that used the query sent ahead
    parts: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    stages: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    arms = [(label(p), p) for p in [None, *providers]]
    load_s = 0.0
    asked = 0
    embedder = {p: [0.0, 0, 0] for p in providers}
    with httpx.Client(base_url=url, timeout=300) as client:
        for conversation in data.conversations:
            runs, took_s = _loaded_runs(client, url, admin, conversation, arms)
            load_s += took_s
            warmup = [text.split(".")[0][:80] for _, _, text in conversation.turns[:WARMUP_CALLS]]
            for text in warmup:
                for name in runs:
                    _call(client, runs, name, text)
            questions = list(dict.fromkeys(q.text for q in conversation.questions))
            names = list(runs)
            before = {p: _embedder_work(p) for p in providers}
            for index, question in enumerate(questions):
                shift = index % len(names)
                for name in names[shift:] + names[:shift]:
                    elapsed, response = _call(client, runs, name, question)
                    samples[name].append(elapsed)
                    _record(name, response, runs[name][3], parts, stages, ahead)
            asked += len(questions)
            for p in providers:
                embedder[p] = [
                    total + now - then
                    for total, now, then in zip(embedder[p], _embedder_work(p), before[p])
                ]
    return {
        "samples": samples,
        "parts": parts,
        "stages": stages,
        "load_s": load_s,
        "questions": asked,
        "embedder": embedder,
        "ahead": ahead,
    }


def _loaded_runs(client: httpx.Client, url: str, admin: dict, conversation, arms) -> tuple:
    """One workspace per arm with the conversation loaded: ({call name: (workspace, headers,
    method, is a recall)}, seconds the loads took)."""
    runs = {}
    load_s = 0.0
    for name, provider in arms:
        ws = f"cost-{conversation.id}-{provider or 'zero'}".lower()
        headers = _workspace(client, admin, ws, blueprint(provider) if provider else None)
        started = time.perf_counter()
        asyncio.run(_load(url, ws, headers, conversation))
        load_s += time.perf_counter() - started
        runs[f"getCount, {name}"] = (ws, headers, "getCount", False)
        runs[f"recall, {name}"] = (ws, headers, "recall", True)
    return runs, load_s


def _call(client: httpx.Client, runs: dict, name: str, query: str) -> tuple[float, httpx.Response]:
    ws, headers, method, is_recall = runs[name]
    body = {"query": query, "topK": TOP_K} if is_recall else {}
    started = time.perf_counter()
    response = client.post(f"/v1/w/{ws}/{method}", headers=headers, json=body)
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed, response


def _record(name: str, response, is_recall: bool, parts, stages, ahead) -> None:
    """The answer's Server-Timing parts, and for a recall its stages and the query sent ahead."""
    for part, ms in server_timing(response).items():
        parts[name][part].append(ms)
    if is_recall:
        ahead[name] += QUERY_AHEAD_PART in response.headers.get("server-timing", "")
        timings = response.json()["timings"]
        for stage, ms in timings.items():
            stages[name][stage].append(ms)
        # the engine part less the stages: parsing, the read's prepare step
        stages[name][OUTSIDE].append(
            server_timing(response).get("engine", 0.0) - sum(timings.get(s, 0.0) for s in STAGES)
        )


def report(measured: dict, providers: list[str]) -> tuple[str, list[str]]:
    """(markdown body, verdict lines)."""
    samples, parts, stages = measured["samples"], measured["parts"], measured["stages"]
    held = targets(providers)
    rows, verdicts = [], []
    for name, values in samples.items():
        floor, target = held.get(name, (None, None))
        ratio = p50(values) / p50(samples[floor]) if floor else 1.0
        verdict = ""
        if floor is not None:
            verdict = f"≤ {target}× getCount: {'met' if ratio <= target else 'missed'}"
            verdicts.append(
                f"{name}: p50 {p50(values):.2f} ms = {ratio:.2f}× getCount p50 "
                f"{p50(samples[floor]):.2f} ms on the same workspace; target {verdict}."
            )
        rows.append([name, p50(values), percentile(values, 99), ratio, verdict])
    part_rows = [[name, *(p50(parts[name].get(part, [])) for part in PARTS)] for name in samples]
    stage_rows = []
    recalls = [name for name in samples if name in held]
    for stage in [*STAGES, OUTSIDE, OVERLAPPED]:
        cells = []
        for name in recalls:
            values = stages[name].get(stage, [])
            calls = len(stages[name].get("rewriteMs", [])) or 1
            cells += [p50(values) if values else 0.0, sum(values) / calls]
        stage_rows.append([STAGE_LABELS.get(stage, stage.removesuffix("Ms")), *cells])
    stage_headers = ["stage"] + [
        f"{name.removeprefix('recall, ')} {what}" for name in recalls for what in ("p50", "mean")
    ]
    body = (
        "## Recall's own cost over HTTP: recall against getCount on the same workspace (ms)\n\n"
        + table(["call", "p50 ms", "p99 ms", "p50 / getCount p50", "target"], rows)
        + "\n\nServer-Timing parts (p50 ms; ingress = inside the Serve replica's handler, "
        "rpc = the Ray call to the workspace actor, actor = inside it, queue = waiting for a "
        "reader thread, engine = the read itself):\n\n"
        + table(["call", *PARTS], part_rows)
        + "\n\nWhere recall's time goes inside the engine (ms per call; p50 of the calls a "
        "stage ran in, and the mean over every call):\n\n" + table(stage_headers, stage_rows)
    )
    return body, verdicts


def embedder_note(provider: str, work: list) -> list[str]:
    seconds, passes, texts = work
    if not passes:
        return []
    return [
        f"The {provider} embedder during the questions: {passes} forward passes of "
        f"{texts / passes:.2f} texts on average, {seconds / passes * 1e3:.2f} ms each inside "
        "its process (the mean): what a bound recall's query vector took beyond that (the "
        "stage table's started-to-in-hand row) went to the calls to and from the embedder "
        "and to waiting for a core."
    ]


def section(path: str, providers: list[str] | None = None) -> tuple[str, list[str]]:
    """Start the service, load and time, stop it: (markdown, notes). `providers`: the bindings
    measured beside zero-binding (default DEFAULT_PROVIDERS; [] for zero-binding only)."""
    from .local_service import start_local_service, stop_local_service

    providers = list(DEFAULT_PROVIDERS if providers is None else providers)
    data = locomo.load(path)
    settings, url, admin = start_local_service("recall-http", ADMIN_TOKEN)
    try:
        measured = measure(url, admin, data, providers)
    finally:
        stop_local_service(settings)
    body, verdicts = report(measured, providers)
    calls = 2 * (1 + len(providers))
    notes = [
        *verdicts,
        f"{data.name}: {len(data.conversations)} conversations, one workspace per conversation "
        f"and binding, loaded over HTTP in {measured['load_s']:.0f} s; {measured['questions']} "
        "questions, each asked once per workspace (a bound recall embeds its query fresh).",
        *(line for p in providers for line in embedder_note(p, measured["embedder"][p])),
        *(
            f"{name}: {measured['ahead'][name]} of {len(measured['samples'][name])} recalls used "
            "the query vector the ingress sent ahead."
            for name in measured["ahead"]
            if name.startswith("recall, ") and name != f"recall, {ZERO}"
        ),
        f"One sequential client on loopback; the {calls} calls interleaved question by question "
        "with their order rotated, so load on this machine hits the floor and recall alike.",
        machine_note(),
    ]
    return body, notes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", required=True, help="a LoCoMo-layout folder")
    parser.add_argument(
        "--providers",
        default=",".join(DEFAULT_PROVIDERS),
        help="comma-separated bindings measured beside zero-binding "
        "(minilm-int8, minilm); empty: zero-binding only",
    )
    args = parser.parse_args(argv)
    providers = [p for p in args.providers.split(",") if p]
    body, notes = section(args.conversations, providers)
    return publish_report("recall-http", body, notes)


if __name__ == "__main__":
    raise SystemExit(main())
