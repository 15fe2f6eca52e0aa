"""What an acknowledgement guarantees with continuous replication: in `sync` mode a write (or an
import chunk) is answered once the replica holds it, so a node lost right after loses nothing
acknowledged, and a replica that cannot confirm makes it a 503, never an acknowledgement; in
`async` mode it is answered at once, and the status shows how far the replica lags."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from minisphere.engine.workspace import Workspace
from minisphere.errors import ReplicationUnconfirmed
from minisphere.settings import ReplicationSettings
from tests.durability.replication.replicas import (
    host_on,
    host_with_unreachable_replica,
    needs_litestream,
    replica_count,
    until,
    write,
)

pytestmark = needs_litestream


def test_a_sync_acknowledgement_means_the_write_is_on_the_replica(tmp_path, daemon):
    host = host_on(tmp_path / "a", tmp_path / "replica", daemon)
    try:
        for n in range(1, 4):
            ok, result, timings = write(host, f"acknowledged fact {n}")
            assert ok, result
            assert timings["replicate_ms"] > 0
            assert replica_count(tmp_path / "replica", tmp_path) == n  # not one write later
    finally:
        host.close()


def test_a_node_lost_after_sync_writes_loses_nothing_acknowledged(tmp_path, daemon):
    a = host_on(tmp_path / "a", tmp_path / "replica", daemon)
    for n in range(25):
        assert write(a, f"fact {n}")[0]
    position = a.workspace.position
    a._lock.release()  # node a is gone: no hibernation, no final sync
    shutil.rmtree(tmp_path / "a")
    b = host_on(tmp_path / "b", tmp_path / "replica", daemon, epoch=2, position=position)
    try:
        assert b.activation["source"] == "replica"
        assert b.activation["position"] == position
        assert b.calls.submit_read("getCount", {}).result()[0]["count"] == 25
    finally:
        b.close()


def _export_of(tmp_path: Path, entries: int) -> list[str]:
    from tests.transfer.helpers import export_text

    with Workspace(tmp_path / "donor.db") as donor:
        for n in range(entries):
            donor.capture(f"imported fact {n}")
        return export_text(donor).splitlines()


def test_a_replica_that_cannot_confirm_makes_a_sync_write_a_503_not_an_acknowledgement(
    tmp_path, daemon
):
    host = host_with_unreachable_replica(tmp_path, daemon, "sync")
    try:
        started = time.monotonic()
        ok, error, _ = write(host, "never confirmed", key="k-1")
        assert not ok and isinstance(error, ReplicationUnconfirmed)
        assert time.monotonic() - started < 10  # bounded, not hanging
        ok, error, _ = write(host, "never confirmed", key="k-1")  # the retry: still not
        assert not ok and isinstance(error, ReplicationUnconfirmed)
        # committed here, never acknowledged: the directory must not be told this position
        assert host.workspace.position == 1 and host.durable_position() == 0
    finally:
        host.close()


def test_async_mode_answers_at_once_and_shows_when_it_last_shipped(tmp_path, daemon):
    settings = ReplicationSettings(mode="async", sync_timeout_s=2.0)
    host = host_on(tmp_path / "a", tmp_path / "replica", daemon, settings=settings)
    try:
        ok, _, timings = write(host, "shipped within a second")
        assert ok and timings["replicate_ms"] < 1.0  # nobody waited for the replica
        until(
            lambda: host.status()["replication"]["lastSyncAt"] is not None,
            host.status,
            timeout_s=10,
        )
        assert replica_count(tmp_path / "replica", tmp_path) == 1
        until(lambda: host.status()["replication"].get("pendingTransactions") == 0, host.status)
        assert host.status()["replication"]["lagSeconds"] == 0
        # what the directory may record follows the replica, a confirmation behind
        until(lambda: host.durable_position() == host.workspace.position, host.status)
    finally:
        host.close()


def test_async_mode_keeps_serving_when_the_replica_is_unreachable_and_shows_the_lag(
    tmp_path, daemon
):
    host = host_with_unreachable_replica(tmp_path, daemon, "async")
    try:
        for n in range(3):
            ok, result, _ = write(host, f"answered though not shipped {n}")
            assert ok, result
        # the replica is failing, and how long it has been behind shows and grows
        until(lambda: (host.status()["replication"].get("lagSeconds") or 0) >= 1.0, host.status)
        shown = host.status()["replication"]
        assert shown["mode"] == "async" and shown["status"] == "failing", shown
        assert shown["pendingTransactions"] != 0, shown
        # answered, but the directory must not record a position only this disk holds: were
        # the node lost, the replica's older state is all there is (async's documented loss)
        assert host.workspace.position == 3 and host.durable_position() == 0
    finally:
        host.close()


def test_a_sync_import_chunk_is_answered_only_once_on_the_replica(tmp_path, daemon):
    from actors.workspace.transfer_steps import TransferSessions

    lines = _export_of(tmp_path, 12)
    host = host_on(tmp_path / "a", tmp_path / "replica", daemon)
    sessions = TransferSessions()
    try:
        report = sessions.import_chunk(host, "k", lines[0], lines[1:], 1, True)
        assert report["complete"] and report["entries"] == 12
        assert replica_count(tmp_path / "replica", tmp_path) == 12
        assert host.durable_position() == host.workspace.position > 0
    finally:
        sessions.close()
        host.close()


def test_an_import_chunk_the_replica_cannot_confirm_is_a_503_not_an_acknowledgement(
    tmp_path, daemon
):
    from actors.workspace.transfer_steps import TransferSessions

    lines = _export_of(tmp_path, 5)
    host = host_with_unreachable_replica(tmp_path, daemon, "sync")
    sessions = TransferSessions()
    try:
        with pytest.raises(ReplicationUnconfirmed):
            sessions.import_chunk(host, "k", lines[0], lines[1:], 1, False)
        assert host.durable_position() == 0
    finally:
        sessions.close()
        host.close()
