"""What a workspace actor tells the directory of the workspace it serves, fire-and-forget: its
placement, positions, snapshot attempts, token use, forgets and the admin's audited operations.
A report never fails the caller: one that cannot be sent is logged."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from actors.handles import Handle
from minisphere.wire.actor_methods import DirectoryMethod

log = logging.getLogger("minisphere.workspace_actor")


class DirectoryNews:
    def __init__(self, directory: Handle | None, workspace_id: Callable[[], str | None]):
        self.directory = directory  # the directory's handle (may be None)
        self.workspace_id = workspace_id

    def tell(self, method: DirectoryMethod, *args: Any) -> None:
        """Tell the directory `method(workspace id, *args)`; nothing when no workspace is bound."""
        workspace_id = self.workspace_id()
        if self.directory is None or workspace_id is None:
            return
        try:
            getattr(self.directory, method).remote(workspace_id, *args)
        except Exception:
            log.warning("could not report %s to the directory", method, exc_info=True)
