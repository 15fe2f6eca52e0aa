"""The node's one Litestream daemon: the first host on a node starts it, under a file lock, in a
session of its own so it outlives the actor that started it; a host that finds it gone starts it
again. Given an owner (the node's raylet) it lives no longer than that process
(daemon_tether.py), and a daemon an earlier owner left behind is stopped before anything is
registered with the new one. `ReplicaControl` (litestream_control.py) speaks to it."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import ClassVar

from minisphere.durability.litestream_control import DaemonJson, ReplicaControl
from minisphere.durability.replication.binary import litestream_binary
from minisphere.errors import ReplicationUnconfirmed
from minisphere.settings import SnapshotSettings

log = logging.getLogger("minisphere.replication")
_STARTED_DAEMONS: list[subprocess.Popen[bytes]] = []  # this process's daemon starts, kept


def _reap(pid: int) -> None:
    """Reap `pid` if it is a daemon this process started: through its Popen, which then knows
    it ended (one left believing its process runs warns at exit), else by its pid."""
    for process in list(_STARTED_DAEMONS):
        if process.pid == pid:
            if process.poll() is not None:
                _STARTED_DAEMONS.remove(process)
            return
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


SOCKET_NAME = "litestream.sock"
CONFIG_NAME = "litestream.yml"
PID_NAME = "litestream.pid"
LOG_NAME = "litestream.log"
OWNER_NAME = "litestream.owner"  # the pid of the process the daemon lives no longer than
DAEMON_START_TIMEOUT_S = 10.0  # for a new daemon's socket to answer
DAEMON_POLL_S = 0.05


def daemon_socket(daemon_dir: str | Path) -> Path:
    return Path(daemon_dir) / SOCKET_NAME


def daemon_environment(snapshots: SnapshotSettings) -> dict[str, str]:
    """The daemon's environment: the store's credentials, when the settings name them.
    `AWS_CA_BUNDLE` is left out: Litestream's S3 client cannot take a custom CA bundle (it
    refuses to load its AWS config at all when one is set); Go reads the same file from
    `SSL_CERT_FILE`, which it is given instead."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("MINISPHERE_") and key != "AWS_CA_BUNDLE"
    }
    if os.environ.get("AWS_CA_BUNDLE"):
        env.setdefault("SSL_CERT_FILE", os.environ["AWS_CA_BUNDLE"])
    if snapshots.s3.access_key_id:
        env["AWS_ACCESS_KEY_ID"] = snapshots.s3.access_key_id
        env["AWS_SECRET_ACCESS_KEY"] = snapshots.s3.secret_access_key
    return env


class LitestreamDaemon:
    """The node's one daemon, kept in `folder` (config, socket, pid file and log). `owner_pid`:
    the process it must not outlive (None: none, it runs until stopped)."""

    # folders whose daemon this process has checked belongs to the current owner
    _owner_checked: ClassVar[set[tuple[str, int]]] = set()

    def __init__(
        self, folder: str | Path, env: dict[str, str] | None = None, owner_pid: int | None = None
    ):
        self.folder = Path(folder)
        self.env = env
        self.owner_pid = owner_pid
        self.control = ReplicaControl(daemon_socket(self.folder))

    def ensure_owned(self) -> None:
        """Once per process and folder: a daemon left running by an earlier owner (a Ray
        session that ended without stopping it) is stopped, and one of this owner started,
        before anything is registered."""
        if self.owner_pid is None or (str(self.folder), self.owner_pid) in self._owner_checked:
            return
        self.ensure_running()
        self._owner_checked.add((str(self.folder), self.owner_pid))

    def _recorded_owner(self) -> int | None:
        try:
            return int((self.folder / OWNER_NAME).read_text(encoding="ascii"))
        except (OSError, ValueError):
            return None

    def ensure_running(self) -> ReplicaControl:
        """Start the daemon unless it answers; the control socket either way. A daemon that
        runs but does not answer in time (a loaded node) is waited for, never doubled: a
        second daemon beside it would leave the files registered with the first shipped by a
        process nobody talks to, and two daemons may ship the same file; on a loaded node every
        slow answer would start another."""
        if self.control.alive() and self._owner_kept():
            return self.control
        self.folder.mkdir(parents=True, exist_ok=True)
        with (self.folder / ".start.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one starter per node at a time
            if not self._owner_kept():
                log.warning(
                    "stopping the litestream daemon in %s: it belongs to process %s, "
                    "not %s (an earlier Ray session)",
                    self.folder,
                    self._recorded_owner(),
                    self.owner_pid,
                )
                self.stop()
            if self.control.alive():
                return self.control
            if self.running_pid() is None:
                self._start()
            else:
                self._await_answer(None)
        return self.control

    def _owner_kept(self) -> bool:
        """The running daemon (if any) belongs to this owner, or no owner is asked for."""
        if self.owner_pid is None or self.running_pid() is None:
            return True
        return self._recorded_owner() == self.owner_pid

    def running_pid(self) -> int | None:
        """The pid of this folder's daemon when that process is alive (a zombie or a reused pid
        is not it: its command line names the folder's config)."""
        try:
            pid = int((self.folder / PID_NAME).read_text(encoding="ascii"))
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            return None
        return pid if str(self.folder / CONFIG_NAME).encode() in command else None

    def _await_answer(self, process: subprocess.Popen[bytes] | None) -> None:
        deadline = time.monotonic() + DAEMON_START_TIMEOUT_S
        while not self.control.alive():
            if (process is not None and process.poll() is not None) or time.monotonic() > deadline:
                raise ReplicationUnconfirmed(
                    f"the litestream daemon does not answer (see {self.folder / LOG_NAME})"
                )
            time.sleep(DAEMON_POLL_S)

    def _start(self) -> None:
        config = self.folder / CONFIG_NAME
        config.write_text(
            f"socket:\n  enabled: true\n  path: {self.folder / SOCKET_NAME}\ndbs: []\n",
            encoding="utf-8",
        )
        (self.folder / SOCKET_NAME).unlink(missing_ok=True)
        command = [litestream_binary(), "replicate", "-config", str(config)]
        if self.owner_pid is not None:  # and no longer than the node's Ray
            command = [
                sys.executable,
                "-m",
                "minisphere.durability.daemon_tether",
                str(self.owner_pid),
                "--",
                *command,
            ]
        with (self.folder / LOG_NAME).open("ab") as out:
            process = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                start_new_session=True,
            )  # outlives the actor that happened to start it
        # held for the process's life: the daemon outlives this call by design, and a Popen
        # dropped while its process runs warns (and would never reap it); earlier starts that
        # ended meanwhile (killed from outside) are reaped and dropped here
        _STARTED_DAEMONS[:] = [p for p in _STARTED_DAEMONS if p.poll() is None]
        _STARTED_DAEMONS.append(process)
        (self.folder / OWNER_NAME).write_text(str(self.owner_pid or ""), encoding="ascii")
        (self.folder / PID_NAME).write_text(str(process.pid), encoding="ascii")
        self._await_answer(process)
        log.info("litestream daemon %d started in %s", process.pid, self.folder)

    def stop(self) -> None:
        """Stop the node's daemon (the embedded service stopping; tests)."""
        self.control.close()  # its kept connections end with it
        with contextlib.suppress(OSError, ValueError):
            pid = int((self.folder / PID_NAME).read_text(encoding="ascii"))
            os.kill(pid, 15)
            deadline = time.monotonic() + DAEMON_START_TIMEOUT_S
            while time.monotonic() < deadline:
                _reap(pid)  # our own child lingers as a zombie unless reaped
                os.kill(pid, 0)  # raises once it is gone
                time.sleep(DAEMON_POLL_S)

    def status(self) -> DaemonJson:
        """What the daemon says of itself and of the databases registered with it."""
        if not self.control.alive():
            return {"running": False, "folder": str(self.folder)}
        return {
            "running": True,
            "folder": str(self.folder),
            **self.control.info(),
            "registered": self.control.databases(),
        }
