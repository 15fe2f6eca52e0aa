"""A resident actor that stops answering (a stopped process, a wedged event loop) is ended
within the liveness bound and its workspace woken again with every write it acknowledged; one
that is only slow to answer is left alone. The directory's parts over the in-process runtime
and real workspace files."""

from __future__ import annotations

import asyncio
import time

from tests.directory.test_directory_state import created, directory_parts

HUNG_AFTER_S = 0.3  # the bound under test (30 s in the service)
SILENT_S = 3600.0  # an ask that would be answered in an hour is never answered


def test_an_actor_that_stops_answering_is_ended_and_its_workspace_woken_with_its_writes(
    tmp_path, monkeypatch
):
    monkeypatch.setattr("minisphere.directory.residents.ACTIVITY_TIMEOUT_S", 0.05)
    monkeypatch.setattr("minisphere.directory.residents.REFRESH_INTERVAL_S", 0.0)
    parts, _, runtime = directory_parts(tmp_path)
    parts.liveness.hung_after_s = HUNG_AFTER_S

    async def drive():
        (ws,) = created(parts, "hangs")
        hung = await parts.activator.activate(ws)
        hung.host.workspace.capture("acknowledged before the actor stopped answering")
        hung.activity_delay_s = SILENT_S
        first_look = await parts.liveness.end_hung()  # marks it silent, ends nothing yet
        gone_by = time.monotonic() + 30
        ended: list[str] = []
        while not ended and time.monotonic() < gone_by:
            await asyncio.sleep(HUNG_AFTER_S / 3)
            ended = await parts.liveness.end_hung()
        woken = await parts.activator.activate(ws)
        return first_look, ended, hung, woken, woken.host.workspace.get_count()

    first_look, ended, hung, woken, count = asyncio.run(drive())
    assert first_look == [] and ended == ["hangs"]
    assert hung.killed and woken is not hung and hung.name not in runtime.live
    assert count == {"count": 1}
    assert parts.liveness.ended == 1


def test_an_actor_slow_to_answer_but_answering_is_never_ended(tmp_path, monkeypatch):
    # the service's own ask timeout; every other ask missed (a loaded node), then answered
    monkeypatch.setattr("minisphere.directory.residents.REFRESH_INTERVAL_S", 0.0)
    parts, _, _ = directory_parts(tmp_path)
    parts.liveness.hung_after_s = 2.0

    async def drive():
        (ws,) = created(parts, "slow")
        actor = await parts.activator.activate(ws)
        ended: list[str] = []
        for look in range(8):
            actor.activity_delay_s = 1.0 if look % 2 == 0 else 0.0
            ended += await parts.liveness.end_hung()
        return ended, actor, parts.residents.get(ws)

    ended, actor, resident = asyncio.run(drive())
    assert ended == [] and not actor.killed
    assert resident is not None and resident.silent_since is None  # the last ask was answered
