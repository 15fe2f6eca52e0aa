"""A forget whose clean-up outside the file failed (the snapshot store was down) and whose
workspace then hibernated: the debt is recorded, and the directory wakes the workspace to pay
it once it is due, on a growing back-off while the store stays down, instead of leaving the
forgotten text in the store for as long as the workspace sleeps. The directory's parts over the
in-process runtime, real workspace files and a real S3-protocol server behind a relay that can
go down."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import zlib
from concurrent.futures import Future
from urllib.parse import urlparse

import boto3
import pytest

from minisphere.control.cleanup_debts import retry_after_s
from tests.directory.test_directory_state import created, directory_parts
from tests.support.tcp_relay import TcpRelay

SECRET = "the vault combination is heron-quartz-6021"


def test_the_back_off_doubles_from_half_a_minute_up_to_an_hour():
    waits = [retry_after_s(attempts) for attempts in range(1, 12)]
    assert waits[:4] == [30.0, 60.0, 120.0, 240.0]
    assert waits[-1] == 3600.0 and waits == sorted(waits)


async def written(host, method: str, body: dict) -> dict:
    future: Future = Future()
    host.calls.submit_write(method, body, future.set_result)
    reply = await asyncio.to_thread(future.result, 60)
    return reply.unwrap()


def stored_with_secret(endpoint: str, bucket: str) -> list[str]:
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    found = []
    for item in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
        blob = s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
        with contextlib.suppress(OSError, EOFError, zlib.error):
            blob = gzip.decompress(blob)
        if SECRET.encode() in blob:
            found.append(item["Key"])
    return found


@pytest.fixture
def relay(s3_endpoint):
    target = urlparse(s3_endpoint)
    running = TcpRelay(target.hostname, target.port).start()
    yield running
    running.stop()


def test_a_forget_the_store_could_not_clean_is_paid_by_a_later_wake_not_left_asleep(
    tmp_path, monkeypatch, s3_endpoint, fresh_bucket, relay
):
    monkeypatch.setattr("minisphere.control.cleanup_debts.CLEANUP_RETRY_FIRST_S", 0.0)
    parts, control, _ = directory_parts(
        tmp_path,
        MINISPHERE_SNAPSHOT_STORE="s3",
        MINISPHERE_S3_BUCKET=fresh_bucket,
        MINISPHERE_S3_ENDPOINT_URL=relay.url,
        MINISPHERE_S3_REGION="us-east-1",
    )

    async def drive():
        (ws,) = created(parts, "owes")
        actor = await parts.activator.activate(ws)
        entry = (await written(actor.host, "capture", {"content": SECRET}))["id"]
        await written(actor.host, "capture", {"content": "a note that stays"})
        await parts.hibernation.hibernate(ws)  # its snapshot holds the secret
        held_before = stored_with_secret(s3_endpoint, fresh_bucket)
        actor = await parts.activator.activate(ws)
        relay.stop()
        await written(actor.host, "forget", {"id": entry})
        await parts.hibernation.hibernate(ws)
        owed = control.cleanup_debts.get(ws)
        still_down = await parts.cleanups.pay_due()  # the store is still down
        owed_again = control.cleanup_debts.get(ws)
        held_while_down = stored_with_secret(s3_endpoint, fresh_bucket)
        relay.start()
        paid = await parts.cleanups.pay_due()
        return ws, held_before, owed, still_down, owed_again, held_while_down, paid

    ws, held_before, owed, still_down, owed_again, held_while_down, paid = asyncio.run(drive())
    assert held_before, "the snapshot taken before the forget holds the secret"
    assert owed is not None and owed["attempts"] == 1
    assert still_down == [] and owed_again["attempts"] == 2 and held_while_down
    assert paid == [ws] and control.cleanup_debts.get(ws) is None
    assert stored_with_secret(s3_endpoint, fresh_bucket) == []
    assert parts.residents.get(ws) is None, "the wake that paid it hibernated it again"
    assert parts.cleanups.paid == 1


def test_a_hibernation_that_owes_nothing_records_no_debt_and_wakes_nothing(tmp_path):
    parts, control, runtime = directory_parts(tmp_path)

    async def drive():
        (ws,) = created(parts, "clean")
        actor = await parts.activator.activate(ws)
        entry = (await written(actor.host, "capture", {"content": SECRET}))["id"]
        await written(actor.host, "forget", {"id": entry})
        await parts.hibernation.hibernate(ws)
        started = len(runtime.live)
        return ws, await parts.cleanups.pay_due(), started

    ws, paid, started = asyncio.run(drive())
    assert control.cleanup_debts.get(ws) is None and control.cleanup_debts.count() == 0
    assert paid == [] and len(runtime.live) == started


def test_a_deleted_workspaces_debt_goes_with_it(tmp_path):
    parts, control, _ = directory_parts(tmp_path)
    (ws,) = created(parts, "gone")
    control.cleanup_debts.note(ws, True, "the store was down")
    asyncio.run(parts.workspaces.delete(ws))
    assert control.cleanup_debts.get(ws) is None


def test_the_residency_status_counts_debts_owed_and_paid(tmp_path):
    from minisphere.directory.status import residency_status

    parts, control, _ = directory_parts(tmp_path)
    (ws,) = created(parts, "counted")
    control.cleanup_debts.note(ws, True, "the store was down")
    status = residency_status(parts)
    assert status["forgetCleanups"] == {"owed": 1, "paid": 0}
    assert status["resident"] == 0 and status["hungEnded"] == 0
