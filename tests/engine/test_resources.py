"""Opening, writing and closing many workspaces gives every file descriptor back."""

import gc
from pathlib import Path

from minisphere.engine.clock import ManualClock
from minisphere.engine.workspace import Workspace


def open_fds(folder: Path) -> int:
    """Descriptors this process holds on files under `folder`.

    Only those: in a full test session other threads of this process (an in-process S3 server
    answering a replication daemon, Ray's client) open and close sockets of their own while this
    test runs, and counting those made the test fail for reasons that are not the engine's."""
    held = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = str(fd.readlink())
        except OSError:  # closed between the listing and the read
            continue
        held += target.startswith(str(folder))
    return held


def exercise(path, clock) -> None:
    ws = Workspace(path, clock=clock, synchronous="NORMAL")
    try:
        a = ws.capture(f"first entry of {path.name}", tags=["fd"])["id"]
        b = ws.capture(f"second entry of {path.name}", kind="episodic")["id"]
        ws.link(a, b, "relates_to")
        ws.append(a, "more")
        ws.run_batch([("capture", {"content": f"batched in {path.name}"}), ("getCount", {})])
        ws.get_entry(a), ws.list_recent(tag="fd"), ws.graph_view([a], hops=2), ws.get_brief()
    finally:
        ws.close()


def test_many_workspaces_return_fds_to_baseline(tmp_path):
    clock = ManualClock()
    exercise(tmp_path / "warmup.db", clock)  # first use loads modules, caches, etc.
    gc.collect()
    baseline = open_fds(tmp_path)
    assert baseline == 0, "the warm-up workspace kept a file open after close"
    for i in range(200):
        exercise(tmp_path / f"ws-{i:03d}.db", clock)
    gc.collect()
    assert open_fds(tmp_path) == baseline
    # reopening the existing files (no migration this time) leaks nothing either
    for i in range(0, 200, 4):
        with Workspace(tmp_path / f"ws-{i:03d}.db", clock=clock, synchronous="NORMAL") as ws:
            assert ws.get_count() == {"count": 3}
    gc.collect()
    assert open_fds(tmp_path) == baseline
