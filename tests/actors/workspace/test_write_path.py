"""A workspace actor's write path over a real host and file (no Ray): what runs beside the file
after a forget -- the admin's exports dropped, the directory told to sweep the nodes -- runs
for a forget that committed, never for one refused before its transaction."""

from __future__ import annotations

import asyncio

import pytest

from actors.workspace.directory_news import DirectoryNews
from actors.workspace.due_notes import DueNotes
from actors.workspace.position_reports import PositionReports
from actors.workspace.write_path import WritePath
from minisphere.engine.methods import METHODS
from minisphere.errors import InvalidArgument, NotFound
from minisphere.hosting.host import WorkspaceHost
from minisphere.hosting.host_options import KnownState
from tests.support.hosts import BY_HAND


def write_path(tmp_path, dropped: list[str]) -> tuple[WritePath, WorkspaceHost]:
    host = WorkspaceHost(
        "ws-writes",
        tmp_path / "ws-writes" / "workspace.db",
        known=KnownState(generation="g", epoch=1),
        tuning=BY_HAND,
    )
    path = WritePath(
        host,
        DueNotes("ws-writes", None),
        DirectoryNews(None, lambda: "ws-writes"),
        PositionReports(lambda: None, lambda position, stored: None),
        lambda: dropped.append("exports"),
    )
    return path, host


@pytest.mark.parametrize(
    ("body", "refusal"),
    [({"id": "123e4567-e89b-42d3-a456-426614174000"}, NotFound), ({"id": 42}, InvalidArgument)],
)
def test_a_refused_forget_leaves_the_admins_exports_in_place(tmp_path, body, refusal):
    dropped: list[str] = []
    path, host = write_path(tmp_path, dropped)
    try:
        with pytest.raises(refusal):
            asyncio.run(path.write(METHODS["forget"], body))
        assert dropped == []
    finally:
        host.close()


def test_a_committed_forget_drops_the_exports_taken_before_it(tmp_path):
    dropped: list[str] = []
    path, host = write_path(tmp_path, dropped)

    async def drive():
        entry = (await path.write(METHODS["capture"], {"content": "forget me"}))[0]["id"]
        await path.write(METHODS["forget"], {"id": entry})

    try:
        asyncio.run(drive())
        assert dropped == ["exports"]
    finally:
        host.close()
