"""OpenAPI links of the published document: which value of an answer is a parameter of which
later call (the workspace id a creation answers is the `workspace_id` of its token routes, the
`tokenId` an issue answers is what a revocation takes, the `id` a capture answers is the entry
the other methods name). A client generator follows them, and so does schemathesis's stateful
testing, which chains the token routes and the workspace lifecycle through them
(create -> token -> call -> revoke -> call).

A link names its target by `operationRef` (a JSON pointer to the path item), not by FastAPI's
generated operation ids, which change with a route function's name."""

from __future__ import annotations

from typing import Any

WORKSPACE_ROUTE = "/v1/workspaces/{workspace_id}"
TOKENS_ROUTE = "/v1/workspaces/{workspace_id}/tokens"
TOKEN_ROUTE = "/v1/workspaces/{workspace_id}/tokens/{token_id}"


def method_route(name: str) -> str:
    return f"/v1/w/{{workspace}}/{name}"


def link(
    path: str,
    verb: str,
    description: str,
    parameters: dict[str, Any] | None = None,
    body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    pointer = path.replace("~", "~0").replace("/", "~1")
    out: dict[str, Any] = {"operationRef": f"#/paths/{pointer}/{verb}", "description": description}
    if parameters:
        out["parameters"] = parameters
    if body:
        out["requestBody"] = body
    return out


def workspace_links(workspace: str) -> dict[str, Any]:
    """Links from an answer about one workspace (its id given by the runtime expression
    `workspace`) to what can be done with it next."""
    at = {"workspace_id": workspace}
    return {
        "IssueToken": link(TOKENS_ROUTE, "post", "issue another token for this workspace", at),
        "ListTokens": link(TOKENS_ROUTE, "get", "list this workspace's tokens", at),
        "GetWorkspace": link(WORKSPACE_ROUTE, "get", "this workspace's record", at),
        "Capture": link(
            method_route("capture"), "post", "write to this workspace", {"workspace": workspace}
        ),
        "GetCount": link(
            method_route("getCount"), "post", "read this workspace", {"workspace": workspace}
        ),
    }


# POST /v1/workspaces (201): the workspace and its first token
CREATED_WORKSPACE = {
    **workspace_links("$response.body#/workspace/id"),
    "RevokeToken": link(
        TOKEN_ROUTE,
        "delete",
        "revoke the token the creation answered",
        {"workspace_id": "$response.body#/workspace/id", "token_id": "$response.body#/tokenId"},
    ),
    "DeleteWorkspace": link(
        WORKSPACE_ROUTE,
        "delete",
        "delete this workspace",
        {"workspace_id": "$response.body#/workspace/id"},
    ),
}

# POST /v1/workspaces/{workspace_id}/tokens (201): the token just issued
TOKEN_ISSUED = {
    **workspace_links("$request.path.workspace_id"),
    "RevokeToken": link(
        TOKEN_ROUTE,
        "delete",
        "revoke the token just issued",
        {"workspace_id": "$request.path.workspace_id", "token_id": "$response.body#/tokenId"},
    ),
}

# DELETE /v1/workspaces/{workspace_id}/tokens/{token_id} (200): the workspace, after it
TOKEN_REVOKED = workspace_links("$request.path.workspace_id")

# the methods that name one entry by `id`, reached from an answer that carries an entry's id
_ENTRY_METHODS = ("getEntry", "connections", "append", "update", "setStatus", "forget")


def entry_links() -> dict[str, Any]:
    """Links from an answer carrying an entry (`id`) to the methods that take its id."""
    links = {
        name[0].upper() + name[1:]: link(
            method_route(name),
            "post",
            f"{name} of this entry",
            {"workspace": "$request.path.workspace"},
            {"id": "$response.body#/id"},
        )
        for name in _ENTRY_METHODS
    }
    links["GraphView"] = link(
        method_route("graphView"),
        "post",
        "the graph around this entry",
        {"workspace": "$request.path.workspace"},
        {"seedIds": ["$response.body#/id"]},
    )
    return links


# the methods whose answer is one entry (capture answers the entry it wrote or matched)
ENTRY_ANSWERS = ("capture", "append", "update", "setStatus", "getEntry")
