"""Helpers of the client tests (a plain module, so test files import it by name)."""

from __future__ import annotations

import inspect


async def got(answer):
    """The answer of a client call: awaited for the async client, as is for the sync one."""
    return await answer if inspect.isawaitable(answer) else answer


async def new_workspace(admin, workspace_id: str, **options):
    """Create a workspace through the admin client; (its workspace client, its write token)."""
    created = await got(admin.create_workspace(workspace_id, **options))
    return admin.workspace(workspace_id, created.token), created.token
