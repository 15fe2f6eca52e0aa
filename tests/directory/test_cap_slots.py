"""A wake's slot under the resident cap: held from the moment the cap has room for the workspace
until its bind has ended, and let go however it ended. A slot kept by a wake that failed would
shrink the cap for good (every later wake evicting one resident more, until none fits); one let
go twice would let more actors than the cap live at once."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minisphere.directory.actor_runtime import ActorGone
from minisphere.errors import Overloaded, WorkspaceUnavailable
from tests.directory.test_directory_state import directory_parts

CAP = 2
WORKSPACES = [f"ws-{n}" for n in range(5)]
# how a wake's bind ends, and what its caller is answered
OUTCOMES = {
    "bound": None,
    "refused by Ray": RuntimeError,  # an error of Ray's own, neither death nor timeout
    "actor died": WorkspaceUnavailable,
    "timed out": WorkspaceUnavailable,
    "cancelled": asyncio.CancelledError,
}
FAILURES = {
    "refused by Ray": lambda: RuntimeError("the raylet could not be reached"),
    "actor died": lambda: ActorGone("died"),
    "timed out": TimeoutError,
    "cancelled": asyncio.CancelledError,
}

wake_rounds = st.lists(
    st.dictionaries(st.sampled_from(WORKSPACES), st.sampled_from(sorted(OUTCOMES)), min_size=1),
    min_size=1,
    max_size=5,
)


async def woken(parts, workspace_id: str, leaves: bool):
    """The wake's outcome as its caller sees it; a caller that `leaves` goes away mid-wake,
    and the outcome is then the wake's own, which goes on without it."""
    caller = asyncio.ensure_future(parts.activator.activate(workspace_id))
    if leaves:
        await asyncio.sleep(0)
        caller.cancel()
    try:
        return await caller
    except BaseException as exc:  # noqa: BLE001 - the outcome under test
        if leaves and isinstance(exc, asyncio.CancelledError):
            await parts.residents.activations.settled(workspace_id)
            return parts.residents.get(workspace_id)
        return exc


async def slots_watched(parts, wakes: asyncio.Future) -> list:
    """The wakes' answers, once they have all ended; meanwhile no more slots are held than
    wakes are under way (a slot left held would make the next wake wait for room for good:
    the round is cut short and fails instead of hanging)."""
    while not wakes.done():
        sizes = parts.residents.state_sizes()
        if sizes["reserved"] > sizes["activations"]:
            wakes.cancel()
            raise AssertionError(f"a cap slot outlived its wake: {sizes}")
        await asyncio.sleep(0)
    return wakes.result()


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(rounds=wake_rounds, callers_leave=st.booleans())
def test_every_wake_lets_its_cap_slot_go_however_its_bind_ends(monkeypatch, rounds, callers_leave):
    monkeypatch.setattr("minisphere.directory.residents.MIN_RESIDENCY_S", 0.0)
    monkeypatch.setattr("minisphere.directory.hibernation.IN_SESSION_S", 0.0)
    with tempfile.TemporaryDirectory() as data_dir:
        parts, control, runtime = directory_parts(Path(data_dir), MINISPHERE_MAX_RESIDENT=str(CAP))

        async def drive() -> None:
            for workspace_id in WORKSPACES:
                parts.workspaces.create(workspace_id, None, None)
            for wakes in rounds:
                runtime.bind_failures = {
                    ws: FAILURES[outcome]() for ws, outcome in wakes.items() if outcome in FAILURES
                }
                resident_before = set(parts.residents.ids())  # answered at once: no bind
                answers = await slots_watched(
                    parts,
                    asyncio.gather(
                        *(woken(parts, ws, callers_leave) for ws in wakes),
                        return_exceptions=True,
                    ),
                )
                for (workspace_id, outcome), answer in zip(wakes.items(), answers, strict=True):
                    expected = None if workspace_id in resident_before else OUTCOMES[outcome]
                    if expected is None:
                        assert not isinstance(answer, BaseException), answer
                    elif not callers_leave:
                        assert isinstance(answer, expected), (workspace_id, outcome, answer)
                assert parts.residents.state_sizes()["reserved"] == 0
                assert parts.residents.state_sizes()["activations"] == 0
                while len(parts.residents.hibernations):
                    await parts.residents.hibernations.any_settled()
                residents = parts.residents.ids()
                assert len(residents) <= CAP
                # no actor left alive but the residents': a failed bind killed its own
                assert sorted(runtime.live) == sorted(
                    parts.residents.get(ws).actor_name for ws in residents
                )

        asyncio.run(drive())
        control.close()


def test_a_wake_refused_for_room_holds_no_slot(tmp_path, monkeypatch):
    """Refused because every resident is in a session, the wake never had room: it holds no
    slot, and the next wake after the sessions end finds the cap as it was."""
    monkeypatch.setattr("minisphere.directory.residents.MIN_RESIDENCY_S", 0.0)
    parts, _, _ = directory_parts(tmp_path, MINISPHERE_MAX_RESIDENT="1")

    async def drive():
        first, second = (
            parts.workspaces.create(n, None, None)["workspace"]["id"] for n in ("first", "second")
        )
        await parts.activator.activate(first)
        with pytest.raises(Overloaded):
            await parts.activator.activate(second)  # `first` was just used: in its session
        return parts.residents.state_sizes()["reserved"]

    assert asyncio.run(drive()) == 0
