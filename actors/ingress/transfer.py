"""Import and export through the service: the ingress side of the admin routes in
`minisphere.http.routes.transfer`. Each page or chunk is one admin call into the workspace's
actor (its `export_page` / `import_chunk` methods; `actors/workspace/transfer_steps.py` does the
work there)."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator

from actors.ingress.gateway import CALL_TIMEOUT_S, Gateway
from actors.workspace.transfer_steps import EXPORT_PAGE_LINES, ExportPage
from minisphere.errors import TransferError
from minisphere.wire.actor_methods import ServedMethod


class TransferOps:
    """What the HTTP routes need, on top of the replica's gateway."""

    def __init__(self, gateway: Gateway):
        self.gateway = gateway

    async def export_pages(self, workspace_id: str) -> AsyncIterator[list[str]]:
        export_id = uuid.uuid4().hex
        for number in itertools.count():
            page: ExportPage = await self.gateway.durability_admin.actor_call(
                workspace_id,
                ServedMethod.EXPORT_PAGE,
                export_id,
                number,
                EXPORT_PAGE_LINES,
                self.gateway.admin_hash,
                timeout_s=CALL_TIMEOUT_S,  # a page is small: no page may hang the export
            )
            yield page["lines"]
            if page["done"]:
                return

    async def import_chunk(
        self, workspace_id: str, key: str, header: str, lines: list[str], first: int, final: bool
    ) -> dict[str, int]:
        if not key.isalnum() or len(key) > 64:
            raise TransferError("key must be 1-64 letters or digits (e.g. the file's sha256)")
        report: dict[str, int] = await self.gateway.durability_admin.actor_call(
            workspace_id,
            ServedMethod.IMPORT_CHUNK,
            key,
            header,
            lines,
            first,
            final,
            self.gateway.admin_hash,
            timeout_s=CALL_TIMEOUT_S,  # a chunk is small: no chunk may hang the import
        )
        return report
