"""What the admin's file operations (`admin_methods.AdminFiles`) and the vector rebinds need of
the workspace actor that owns them, apart from both so neither imports the other for it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from actors.workspace.admission import Admission
    from actors.workspace.directory_news import DirectoryNews
    from actors.workspace.due_notes import DueNotes
    from actors.workspace.position_reports import PositionReports
    from actors.workspace.token_checks import TokenChecks
    from minisphere.hosting.host import WorkspaceHost


class FileOwner(Protocol):
    """What the admin's file operations need of the workspace actor that owns them: the
    workspace bound now (its host, due notes and position reports), the token checks, the
    admission of calls, and the fire-and-forget news for the directory."""

    host: WorkspaceHost | None
    tokens: TokenChecks
    due: DueNotes | None
    positions: PositionReports

    news: DirectoryNews

    def _admission(self) -> Admission: ...
