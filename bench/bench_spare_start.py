"""Start cost of a warm spare beside a bare Ray actor, side by side in one run.

    python -m bench.bench_spare_start                     # 3 rounds of 16 starts per kind
    python -m bench.bench_spare_start --rounds 1 --starts 8      # a quicker look

One local Ray (2 CPUs, no dashboard). Three kinds, each started `--starts` at once per round,
the kinds in turn within every round (this machine's load drifts; taking turns spreads it):
- bare: a Ray actor with one method, started with the options the directory gives a spare
  (named, detached, num_cpus=0, max_restarts=-1);
- spare: a `WorkspaceActor` with no workspace, started through `RayActors.start` (the
  directory's own doorway), from an actor with no runtime_env, as under `minisphere serve`,
  with the bytecode the launcher writes before Ray starts;
- spare under env_vars: the same, started from an actor whose runtime_env sets env_vars. Ray
  hands a parent's runtime_env down to every actor it starts (an empty one given to the child
  changes nothing), so this is what the directory's spares get when the Serve app has a
  runtime_env (`infra/serve_config.yaml` sets env_vars): every such worker starts through Ray's
  setup_worker.py shim, a second interpreter that imports Ray before the worker's own.

Per round and kind: the time from submitting the starts to the last `ready()` answer gives
starts/s. Start CPU per actor: the CPU-seconds all of this Ray's processes (the new workers,
the raylet, the GCS, Ray's agents) spent over that time, less what they spend idle, divided by
the starts; and, separately, the new worker's own CPU (/proc/<pid>/stat). The targets
(start CPU ≤ 1.15× bare, starts/s ≥ 0.87× bare) compare the medians over the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid

from .bench_serverless import _read, ray_processes
from .common import machine_note, p50, publish_report, table

NAMESPACE = "bench-spare-start"
IDLE_SAMPLE_S = 5.0  # Ray's own idle CPU, measured before the rounds
SETTLE_S = 2.0  # after killing a round's actors, before the next round
ENV_VARS = {"MINISPHERE_BENCH_MARK": "1"}  # any non-empty runtime_env takes the shim
CPU_TARGET, RATE_TARGET = 1.15, 0.87


def process_cpu() -> dict[int, float]:
    """CPU-seconds (user + system) of every process of this Ray, by pid."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in ray_processes():
        fields = _read(f"/proc/{pid}/stat").rsplit(")", 1)[-1].split()
        if len(fields) > 13:
            out[pid] = (int(fields[11]) + int(fields[12])) / tick
    return out


def make_launcher():
    """The remote classes, defined once Ray is imported: a bare actor, and a launcher that
    starts `n` actors of a kind at once and times them until every one answered `ready()`."""
    import ray

    from actors.directory.runtime import RayActors
    from actors.workspace.actor import WorkspaceActor

    @ray.remote(num_cpus=0)
    class BareActor:
        async def ready(self) -> dict:
            return {"pid": os.getpid()}

    @ray.remote(num_cpus=0)
    class Launcher:
        async def start(self, kind: str, n: int) -> dict:
            names = [f"bench-{kind}-{uuid.uuid4().hex[:12]}" for _ in range(n)]
            started = time.perf_counter()
            if kind == "bare":
                handles = [
                    BareActor.options(
                        name=name,
                        namespace=NAMESPACE,
                        lifetime="detached",
                        max_restarts=-1,
                        max_task_retries=0,
                    ).remote()
                    for name in names
                ]
            else:
                runtime = RayActors(WorkspaceActor, NAMESPACE, None, "")
                handles = [runtime.start(name, {}) for name in names]
            answers = await asyncio.gather(*(h.ready.remote() for h in handles))
            return {
                "seconds": time.perf_counter() - started,
                "names": names,
                "pids": [answer["pid"] for answer in answers],
            }

    return Launcher


def run_round(ray, launcher, kind: str, n: int, idle_cpu_per_s: float) -> dict:
    before = process_cpu()
    wall = time.monotonic()
    result = ray.get(launcher.start.remote(kind, n), timeout=600)
    wall = time.monotonic() - wall
    after = process_cpu()
    total = sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())
    own = [after.get(pid, 0.0) for pid in result["pids"]]
    for name in result["names"]:
        ray.kill(ray.get_actor(name, namespace=NAMESPACE), no_restart=True)
    time.sleep(SETTLE_S)
    return {
        "rate": n / result["seconds"],
        "cpu": max(0.0, total - idle_cpu_per_s * wall) / n,
        "own": p50(own),
    }


def idle_rate() -> float:
    before = process_cpu()
    time.sleep(IDLE_SAMPLE_S)
    after = process_cpu()
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items()) / IDLE_SAMPLE_S


KINDS = (
    ("bare", "bare actor"),
    ("spare", "spare WorkspaceActor"),
    ("spare-env", "spare WorkspaceActor, parent with env_vars"),
)


def rows_of(results: dict[str, list[dict]]) -> list[list]:
    bare_cpu = p50([r["cpu"] for r in results["bare"]])
    bare_rate = p50([r["rate"] for r in results["bare"]])
    rows = []
    for kind, label in KINDS:
        cpu = p50([r["cpu"] for r in results[kind]])
        rate = p50([r["rate"] for r in results[kind]])
        own = p50([r["own"] for r in results[kind]])
        rounds = ", ".join(f"{r['cpu']:.2f}" for r in results[kind])
        judged = (
            ""
            if kind == "bare"
            else (
                f"CPU ≤ {CPU_TARGET}×: {'met' if cpu <= CPU_TARGET * bare_cpu else 'missed'}; "
                f"rate ≥ {RATE_TARGET}×: {'met' if rate >= RATE_TARGET * bare_rate else 'missed'}"
            )
        )
        rows.append(
            [
                label,
                f"{cpu:.2f} CPU-s ({cpu / bare_cpu:.2f}×)",
                f"{rate:.2f}/s ({rate / bare_rate:.2f}×)",
                f"{own:.2f} CPU-s",
                rounds,
                judged,
            ]
        )
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--starts", type=int, default=16, help="actors started at once")
    args = parser.parse_args(argv)
    import ray

    from serve_app import compile_worker_code

    compile_worker_code()  # as the launcher does before Ray starts
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        namespace=NAMESPACE,
        logging_level="WARNING",
        log_to_driver=False,
    )
    try:
        launcher_class = make_launcher()
        launchers = {
            "bare": launcher_class.remote(),
            "spare": launcher_class.remote(),
            "spare-env": launcher_class.options(runtime_env={"env_vars": ENV_VARS}).remote(),
        }
        for launcher in launchers.values():  # warm: each has its own worker
            ray.get(launcher.start.remote("bare", 1), timeout=300)
        time.sleep(SETTLE_S)
        idle = idle_rate()
        results: dict[str, list[dict]] = {kind: [] for kind, _ in KINDS}
        for number in range(args.rounds):
            for kind, _ in KINDS:
                results[kind].append(run_round(ray, launchers[kind], kind, args.starts, idle))
                print(f"round {number + 1} {kind}: {results[kind][-1]}", flush=True)
    finally:
        ray.shutdown()
    body = table(
        [
            "actor",
            "start CPU (all Ray processes), p50 of rounds",
            "starts/s",
            "the worker's own CPU",
            "CPU per round",
            "target",
        ],
        rows_of(results),
    )
    notes = [
        f"{args.rounds} rounds × {args.starts} actors started at once per kind, kinds in "
        f"turn; Ray's idle CPU ({idle:.3f} CPU-s/s, measured first) subtracted.",
        machine_note(),
    ]
    return publish_report("spare-start", body, notes)


if __name__ == "__main__":
    raise SystemExit(main())
