"""Admin routes for import and export (`ops`: the import/export operations; in the service
`actors/ingress/transfer.py`).

    GET  /v1/workspaces/{id}/export          -> application/x-ndjson, the JSONL export (streamed)
    POST /v1/workspaces/{id}/import?key=K&first=N&final=true|false
         body: the export's header line, then data lines N, N+1, … of the file (JSONL)
         -> {"applied", "expected", "entries", "edges", "duplicate…"}; with final=true the
            import's full report, and its checkpoint is dropped.

`minisphere import` sends a file in chunks (`IMPORT_CHUNK_LINES` lines, minisphere/cli/data.py);
re-sending a chunk (after a failure) is harmless: the workspace's checkpoint skips lines already
applied.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Annotated, Any, Protocol

from fastapi import Depends, Request
from fastapi.responses import JSONResponse, StreamingResponse

from minisphere.control.auth import check_workspace_id
from minisphere.errors import ImportFormatError, MalformedRequest, TransferError
from minisphere.http import service_responses as S
from minisphere.http.callers import AdminGateway, WorkspaceId
from minisphere.http.error_responses import ERROR_RESPONSES
from minisphere.http.handling import (
    MAX_JSON_NESTING_LEVELS,
    nesting_levels_exceed,
    query_integer,
    read_body,
    refuse_unencodable_text,
)
from minisphere.http.routes import Routes

IMPORT_MAX_BODY_BYTES = 16 * 1024 * 1024
IMPORT_MAX_FIRST_LINE = 999_999_999  # `first`: a data line number
NDJSON = "application/x-ndjson"
_IMPORT_KEY = re.compile(r"[A-Za-z0-9]{1,64}")  # ASCII only: str.isalnum() takes any script


def _flag(raw: str, name: str) -> bool:
    if raw not in ("true", "false", "1", "0"):
        raise MalformedRequest(f"{name} must be true or false")
    return raw in ("true", "1")


def check_lines(lines: list[str], first: int) -> None:
    """Refuse a line nested deeper than the JSON bodies may be, or holding text that is not
    valid Unicode, naming its line in the file (the header is line 1, data line `first` is line
    first + 1). Only a line with more brackets than the limit can be that deep, and only one
    with a \\u escape can hold a lone surrogate, so the others are not parsed twice."""
    for index, line in enumerate(lines):
        number = 1 if index == 0 else first + index
        deep_enough = line.count("[") + line.count("{") > MAX_JSON_NESTING_LEVELS
        if not deep_enough and "\\u" not in line:
            continue
        try:
            value = json.loads(line)
            deep = deep_enough and nesting_levels_exceed(value)
        except RecursionError:
            deep = True
        except ValueError:  # not JSON at all: the importer names the line itself
            continue
        if deep:
            raise ImportFormatError(
                f"line {number}: nests deeper than {MAX_JSON_NESTING_LEVELS} levels"
            )
        try:
            refuse_unencodable_text(line, value, f"line {number}")
        except MalformedRequest as exc:
            raise ImportFormatError(exc.message) from None


class TransferOperations(Protocol):
    """The import/export operations the routes call: the service's (`actors.ingress.transfer`)
    or, in process, the engine's."""

    def export_pages(self, workspace_id: str) -> AsyncIterator[list[str]]: ...

    async def import_chunk(
        self, workspace_id: str, key: str, header: str, lines: list[str], first: int, final: bool
    ) -> dict[str, Any]: ...


async def _admin_operations(request: Request, _admin: AdminGateway) -> TransferOperations:
    operations: TransferOperations = request.app.state.transfer
    return operations


# the import/export operations, for the admin (only the admin reaches them)
TransferOps = Annotated[TransferOperations, Depends(_admin_operations)]

routes = Routes(tags=["admin"])


@routes.get(
    "/v1/workspaces/{workspace_id}/export",
    summary="export the workspace as JSONL (streamed)",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "header line, then one line per entry and edge",
            "content": {NDJSON: {"schema": {"type": "string"}}},
        },
        **ERROR_RESPONSES,
    },
)
async def export_workspace(workspace_id: WorkspaceId, ops: TransferOps) -> StreamingResponse:
    pages = ops.export_pages(check_workspace_id(workspace_id))
    first = await pages.__anext__()  # errors before any byte is sent

    async def body() -> AsyncIterator[str]:
        yield "".join(line + "\n" for line in first)
        async for page in pages:
            yield "".join(line + "\n" for line in page)

    return StreamingResponse(
        body(),
        media_type=NDJSON,
        headers={"Content-Disposition": f'attachment; filename="{workspace_id}.jsonl"'},
    )


@routes.post(
    "/v1/workspaces/{workspace_id}/import",
    summary="import a chunk of a JSONL export (header line + data lines)",
    responses={200: {"model": S.ImportReport}, **ERROR_RESPONSES},
    openapi_extra={"requestBody": {"content": {NDJSON: {"schema": {"type": "string"}}}}},
)
async def import_workspace(
    workspace_id: WorkspaceId,
    request: Request,
    ops: TransferOps,
    key: str = "",
    first: str = "1",
    final: str = "false",
) -> JSONResponse:
    check_workspace_id(workspace_id)
    first_line = query_integer(first, "first", 1, IMPORT_MAX_FIRST_LINE)
    is_final = _flag(final, "final")
    if not _IMPORT_KEY.fullmatch(key):
        raise TransferError("key must be 1-64 letters or digits (e.g. the file's sha256)")
    raw = await read_body(
        request,
        IMPORT_MAX_BODY_BYTES,
        "an import chunk must be smaller: send fewer lines per request",
    )
    try:
        lines = [line for line in raw.decode("utf-8").split("\n") if line.strip()]
    except UnicodeDecodeError:
        raise MalformedRequest("the import body must be UTF-8 JSONL") from None
    if not lines:
        raise MalformedRequest("the import body must start with the export's header line")
    check_lines(lines, first_line)
    report = await ops.import_chunk(workspace_id, key, lines[0], lines[1:], first_line, is_final)
    return JSONResponse(report)
