"""The admin's file operations of a workspace actor keep nothing of a workspace once the actor
lets go of it: a recycled process serves another tenant next."""

from __future__ import annotations

from types import SimpleNamespace

from actors.workspace.admin_methods import AdminFiles
from actors.workspace.vector_rebinds import RebindRun


def test_a_recycled_process_reports_no_rebind_of_the_workspace_it_served_before():
    files = AdminFiles(SimpleNamespace(host=None))
    files.rebinds.last = RebindRun("hash", state="done", embedded=12, total=12)
    files.let_go()
    assert files.rebinds.last is None and files._transfers is None
