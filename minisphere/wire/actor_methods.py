"""The names of the actor methods other processes call by name, one enum per way in.

A Ray call names its method as an attribute or a string, which nothing checks before it runs;
these enums are what the call sites pass instead: `tests/actors/test_actor_protocols.py` checks
every member against the actor class that must define it, that each member a call site names
exists (so does mypy, in the modules it checks), and that no call site names a method with a
bare string. Each member is its method's own name (a `str`): what crosses the wire is unchanged.
"""

from __future__ import annotations

from enum import StrEnum


class WorkspaceActorMethod(StrEnum):
    """What the directory calls on a workspace actor it holds, through its actor runtime."""

    READY = "ready"
    BIND = "bind"
    OPENING = "opening"
    SET_TOKENS = "set_tokens"
    ACTIVITY = "activity"
    HIBERNATE = "hibernate"


class ServedMethod(StrEnum):
    """What callers reach a workspace by: sent through the actor's `serve` gate, which runs it
    only while the actor serves the workspace named."""

    CALL = "call"
    SNAPSHOT = "snapshot"
    RESTORE = "restore"
    RESTORE_TO_MOMENT = "restore_to_moment"
    PRUNE_SNAPSHOTS = "prune_snapshots"
    EXPORT_PAGE = "export_page"
    IMPORT_CHUNK = "import_chunk"
    DURABILITY = "durability"
    REBIND_VECTORS = "rebind_vectors"
    VECTOR_BINDING = "vector_binding"


class DirectoryMethod(StrEnum):
    """What the ingress, the reach loop and the in-cluster client ask the directory actor
    (`workspace_reach.ask`), and the reports workspace actors send it (fire-and-forget)."""

    # workspaces
    CREATE = "create"
    LIST = "list"
    GET = "get"
    DELETE = "delete"
    DURABILITY = "durability"
    RESIDENT = "resident"
    # tokens
    AUTHENTICATE = "authenticate"
    WHOAMI = "whoami"
    CREATE_TOKEN = "create_token"
    LIST_TOKENS = "list_tokens"
    REVOKE_TOKEN = "revoke_token"
    # residency and durability
    ACTIVATE = "activate"
    ENDED_CLEANLY = "ended_cleanly"
    HIBERNATE = "hibernate"
    ACCEPT_STORED_STATE = "accept_stored_state"
    SET_VECTOR_BINDING = "set_vector_binding"
    MAINTENANCE = "maintenance"
    # reports from workspace actors
    PLACED = "placed"
    POSITION = "position"
    SNAPSHOT_STATUS = "snapshot_status"
    AUDIT_EVENT = "audit_event"
    TOKENS_USED = "tokens_used"
    FORGOT = "forgot"
