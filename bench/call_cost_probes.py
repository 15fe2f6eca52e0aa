"""What bench_call_cost reads from /proc beside the machine's CPU: when the machine's set of
processes has been still long enough to measure (`PidWatch`), each thread's CPU in a process
(Ray's native threads, which py-spy does not show), and py-spy's samples of a process by leaf
function."""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

from .bench_serverless import _read

ROOT = Path(__file__).resolve().parents[1]
PID_POLL_S = 0.2  # how often the set of processes is read (a listing of /proc, ~0.3 ms)
PROFILE_RATE_HZ = 100


def pids_now() -> frozenset[int]:
    return frozenset(int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit())


class PidWatch(threading.Thread):
    """Reads the set of pids in /proc every PID_POLL_S: `wait_quiet()` returns once no process
    has started or ended for a while; `changes` counts the polls that saw one (a window whose
    count moved had a process start or end inside it)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.changes = self.started = self.ended = 0
        self._pids = pids_now()
        self._last_change = time.monotonic()
        self._changed = threading.Condition()
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(PID_POLL_S):
            now = pids_now()
            if now == self._pids:
                continue
            with self._changed:
                self.started += len(now - self._pids)
                self.ended += len(self._pids - now)
                self.changes += 1
                self._pids, self._last_change = now, time.monotonic()
                self._changed.notify_all()

    def wait_quiet(self, quiet_s: float, timeout_s: float) -> bool:
        """Until no process started or ended for `quiet_s` (True), or `timeout_s` passed first
        (False)."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                now = time.monotonic()
                left = self._last_change + quiet_s - now
                if left <= 0:
                    return True
                if now >= deadline:
                    return False
                self._changed.wait(min(left, deadline - now))

    def stop(self) -> None:
        self._halt.set()
        self.join(5)


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """{thread id: (thread name, user + system CPU seconds so far)} of one process; the main
    thread's name is marked (a Ray worker's keeps the title it had when it started)."""
    tick = os.sysconf("SC_CLK_TCK")
    threads = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        fields = _read(task / "stat").rsplit(")", 1)[-1].split()
        if len(fields) > 12:
            name = _read(task / "comm").strip() + (" (main)" if task.name == str(pid) else "")
            threads[int(task.name)] = (name, (int(fields[11]) + int(fields[12])) / tick)
    return threads


def process_name(pid: int) -> str:
    """A process's short name (/proc/PID/comm), a kernel worker's without what it works on."""
    name = _read(f"/proc/{pid}/comm").strip() or f"pid {pid} (ended)"
    return name.split("/")[0] if name.startswith("kworker") else name


def thread_spent(before: dict, after: dict) -> Counter[str]:
    """CPU seconds by thread name between two `thread_cpu` readings (threads of one name
    summed; a thread started in between counts from zero)."""
    spent: Counter[str] = Counter()
    for tid, (name, cpu) in after.items():
        spent[name] += cpu - before.get(tid, (name, 0.0))[1]
    return spent


def start_profile(pid: int, seconds: float, out: Path) -> subprocess.Popen:
    """py-spy sampling one process (Python frames only, without pausing it)."""
    command = ["py-spy", "record", "-p", str(pid), "-d", str(int(seconds))]
    command += ["-r", str(PROFILE_RATE_HZ), "-f", "raw", "-o", str(out), "--nonblocking"]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


PROJECT_FILES = ("(minisphere/", "(actors/", "(serve_app.py", "(bench/")


def frame_name(frame: str) -> str:
    """`function (file)`: a frame of py-spy without its line, paths from the package root."""
    frame = re.sub(r":\d+\)$", ")", frame)
    frame = re.sub(r"\(/\S*/(site-packages|lib/python3\.\d+)/", "(", frame)
    return frame.replace(f"({ROOT}/", "(")


def profile_counts(raw: Path) -> dict:
    """A py-spy raw file (a line is `frame;frame;...;leaf count`) counted: samples by leaf
    function, by the innermost frame of this project's code (what of ours was running, whatever
    it had called), and all samples."""
    leaves: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    text = raw.read_text(encoding="utf-8", errors="replace") if raw.exists() else ""
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        # a thread sampled with no Python frame on its stack: a native thread (Ray's) that
        # holds a Python thread state
        frames = [frame_name(frame) for frame in stack.split(";")] if stack else []
        leaves[frames[-1] if frames else "(no Python frame)"] += int(count)
        ours = [frame for frame in frames if any(mark in frame for mark in PROJECT_FILES)]
        own[ours[-1] if ours else "(no frame of this project)"] += int(count)
        total += int(count)
    return {"leaves": leaves, "own": own, "total": total}


def python_threads(pid: int) -> dict[str, list[str]]:
    """{OS thread name: the Python names (and innermost frames) of its threads}, from one
    `py-spy dump`: which Python thread a Ray worker's thread of some name is, if any."""
    dump = subprocess.run(
        ["py-spy", "dump", "-p", str(pid), "--nonblocking"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    ).stdout.splitlines()
    named: dict[str, list[str]] = {}
    for at, line in enumerate(dump):
        found = re.match(r'Thread (\d+) \((\w+)\): "(.*)"', line)
        if not found:
            continue
        tid, python_name = found.group(1), found.group(3)
        frame = dump[at + 1].strip() if at + 1 < len(dump) else ""
        top = "" if frame.startswith("Thread ") else f", in {frame_name(frame)}"
        comm = _read(f"/proc/{pid}/task/{tid}/comm").strip()
        if tid == str(pid):
            comm += " (main)"
        named.setdefault(comm, []).append(f"{python_name}{top}")
    return named
