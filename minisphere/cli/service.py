"""`minisphere serve`, `minisphere ws create|list|show|delete|hibernate|prune-snapshots|snapshot|
snapshots|restore`,
`minisphere token create|list|revoke` and the workspace commands
(`capture`, `recall`, `get`, `append`, `update`, `status`, `forget`, `link`, `unlink`,
`recent`, `connections`, `count`, `tags`, `stats`, `brief`, `call`) over HTTP.

Connection settings come from flags or the environment: MINISPHERE_URL, MINISPHERE_WORKSPACE,
MINISPHERE_TOKEN (workspace token), MINISPHERE_ADMIN_TOKEN (else `<data>/.admin_token` of the
embedded default is used when readable).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from minisphere.cli.common import NO_TOKEN, Subparsers, admin_token, connection_flags, fail
from minisphere.client import Client, ServiceError, WorkspaceClient
from minisphere.control.auth import TOKEN_SCOPES
from minisphere.settings import (
    CLIENT_ENV_VARS,
    ENV_VARS,
    PROJECT_ROOT,
    env_table_markdown,
    env_value,
)

APP_LAUNCHER = "serve_app.py"


def _print(value: object) -> None:
    if hasattr(value, "model_dump"):
        value = value.model_dump(by_alias=True, exclude_none=True)
    elif isinstance(value, list):
        value = [
            v.model_dump(by_alias=True, exclude_none=True) if hasattr(v, "model_dump") else v
            for v in value
        ]
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _run(
    action: Callable[[Client, argparse.Namespace], object],
) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        token = admin_token(args)
        if not token and not getattr(args, "token", ""):
            return fail(NO_TOKEN)
        try:
            with Client(args.url, admin_token=token) as client:
                _print(action(client, args))
            return 0
        except ServiceError as exc:  # status 0: refused here, before anything was sent
            return fail(exc.message if exc.status == USAGE_STATUS else str(exc))
        except (httpx.TransportError, OSError) as exc:  # connection refused and friends
            return fail(f"cannot reach {args.url}: {exc}")

    return run


USAGE_STATUS = 0


def _usage(message: str) -> ServiceError:
    return ServiceError(USAGE_STATUS, "usage", message)


def _json_argument(text: str, what: str) -> Any:  # any JSON value: the service checks it
    try:
        return json.loads(text)
    except ValueError as exc:
        raise _usage(f"{what} is not valid JSON: {exc}") from None


def _blueprint_file(path: Path | None) -> Any:  # a JSON value, or None without a file
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise _usage(f"cannot read the blueprint file {path}: {exc.strerror or exc}") from None
    return _json_argument(text, f"the blueprint file {path}")


def _ws(client: Client, args: argparse.Namespace) -> WorkspaceClient:
    if not args.workspace:
        raise _usage("give --workspace (or set MINISPHERE_WORKSPACE)")
    return client.workspace(args.workspace, args.token or None)


def _serve(args: argparse.Namespace) -> int:
    """Run the Ray application's launcher (`serve_app.py`) in place of this process: the
    library never imports the Ray layer, it starts it."""
    try:
        app_dir = find_app_dir(args.app_dir)
    except FileNotFoundError as exc:
        return fail(str(exc))
    launcher = str(app_dir / APP_LAUNCHER)
    os.execv(sys.executable, [sys.executable, launcher])
    return 0  # pragma: no cover - execv does not return


def find_app_dir(explicit: str | None = None) -> Path:
    """Where `serve_app.py` and `actors/` are: `--app-dir`, else MINISPHERE_APP_DIR, else the
    checkout this package runs from, else the current directory."""
    candidates = [Path(p) for p in (explicit, env_value("MINISPHERE_APP_DIR")) if p]
    candidates += [PROJECT_ROOT, Path.cwd()]
    for folder in candidates:
        if (folder / APP_LAUNCHER).is_file() and (folder / "actors").is_dir():
            return folder.resolve()
    raise FileNotFoundError(
        "minisphere serve needs the service application (serve_app.py and actors/): run it in "
        "a checkout of the project, or pass --app-dir / set MINISPHERE_APP_DIR"
    )


def _settings(args: argparse.Namespace) -> int:
    print(env_table_markdown(ENV_VARS if not args.client else CLIENT_ENV_VARS))
    return 0


def _register_ws(subparsers: Subparsers) -> None:
    ws = subparsers.add_parser("ws", help="create, list, show and delete workspaces (admin)")
    actions = ws.add_subparsers(dest="ws_command", required=True)
    create = actions.add_parser("create", help="create a workspace; prints its token once")
    create.add_argument("id", nargs="?")
    create.add_argument("--label")
    create.add_argument("--blueprint", type=Path, help="blueprint JSON file")
    create.set_defaults(
        func=_run(
            lambda c, a: c.create_workspace(
                a.id, label=a.label, blueprint=_blueprint_file(a.blueprint)
            )
        )
    )
    listing = actions.add_parser("list", help="list workspaces")
    listing.set_defaults(func=_run(lambda c, a: c.list_workspaces()))
    show = actions.add_parser("show", help="show one workspace")
    show.add_argument("id")
    show.set_defaults(func=_run(lambda c, a: c.get_workspace(a.id)))
    delete = actions.add_parser("delete", help="delete a workspace and all its data")
    delete.add_argument("id")
    delete.set_defaults(func=_run(lambda c, a: c.delete_workspace(a.id)))
    hibernate = actions.add_parser(
        "hibernate",
        help="snapshot if changed, close, release its actor (it wakes on its next call)",
    )
    hibernate.add_argument("id")
    hibernate.set_defaults(func=_run(lambda c, a: c.hibernate_workspace(a.id)))
    prune = actions.add_parser(
        "prune-snapshots",
        help="keep only the newest snapshot versions (after a forget: drop those holding the text)",
    )
    prune.add_argument("id")
    prune.add_argument("--keep", type=int, default=1)
    prune.set_defaults(func=_run(lambda c, a: c.prune_snapshots(a.id, a.keep)))
    snapshot = actions.add_parser("snapshot", help="take a snapshot now")
    snapshot.add_argument("id")
    snapshot.set_defaults(func=_run(lambda c, a: c.snapshot(a.id)))
    snapshots = actions.add_parser("snapshots", help="list a workspace's snapshot versions")
    snapshots.add_argument("id")
    snapshots.set_defaults(func=_run(lambda c, a: c.list_snapshots(a.id)))
    restore = actions.add_parser(
        "restore",
        help="restore a snapshot version, or the state at a moment (with continuous replication)",
    )
    restore.add_argument("id")
    which = restore.add_mutually_exclusive_group(required=True)
    which.add_argument("--version", help="a version from `ws snapshots`")
    which.add_argument("--at", metavar="TIMESTAMP", help="UTC, e.g. 2026-12-02T06:00:00Z")
    restore.set_defaults(func=_run(lambda c, a: c.restore(a.id, version=a.version, timestamp=a.at)))
    for parser in (create, listing, show, delete, hibernate, prune, snapshot, snapshots, restore):
        connection_flags(parser, workspace=False)


def _opts(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    return {n: getattr(args, n) for n in names if getattr(args, n, None) not in (None, [])}


IDEMPOTENCY_KEY_HELP = (
    "make the write safe to repeat: sent again with the same key, it is "
    "answered as the first time and applied at most once (keys are kept "
    "at least 24 h)"
)


def _register_tokens(subparsers: Subparsers) -> None:
    tokens = subparsers.add_parser("token", help="issue, list and revoke workspace tokens (admin)")
    actions = tokens.add_subparsers(dest="token_command", required=True)
    create = actions.add_parser("create", help="issue a token; prints its secret once")
    create.add_argument("workspace")
    create.add_argument("--scope", choices=TOKEN_SCOPES, default="write")
    create.add_argument("--label")
    create.add_argument("--expires-in-s", type=int)
    create.set_defaults(
        func=_run(
            lambda c, a: c.create_token(
                a.workspace, a.scope, label=a.label, expires_in_s=a.expires_in_s
            )
        )
    )
    listing = actions.add_parser("list", help="a workspace's tokens (no secrets)")
    listing.add_argument("workspace")
    listing.set_defaults(func=_run(lambda c, a: c.list_tokens(a.workspace)))
    revoke = actions.add_parser("revoke", help="revoke a token at once")
    revoke.add_argument("workspace")
    revoke.add_argument("token_id")
    revoke.set_defaults(func=_run(lambda c, a: c.revoke_token(a.workspace, a.token_id)))
    for parser in (create, listing, revoke):
        connection_flags(parser, workspace=False)


Argument = tuple[tuple[str, ...], dict[str, Any]]  # add_argument's flags and keywords


@dataclass(frozen=True)
class CallCommand:
    """A workspace call the CLI offers: its command, what it sends, and its arguments."""

    name: str
    help: str
    action: Callable[[Any, argparse.Namespace], Any]  # (workspace client, parsed arguments)
    arguments: tuple[Argument, ...] = ()
    write: bool = False  # takes --idempotency-key


def _pos(name: str) -> Argument:
    return (name,), {}


def _key(args: argparse.Namespace) -> dict[str, str | None]:
    return {"idempotency_key": args.idempotency_key}


# reads as of a past moment
_AS_OF: Argument = (("--as-of",), {"metavar": "RFC3339", "help": "as the workspace held it then"})

CALL_COMMANDS = (
    CallCommand(
        "capture",
        "store a fact or event",
        lambda w, a: w.capture(
            a.content,
            **_key(a),
            **_opts(a, "tags", "kind", "volatility", "status", "importance", "source", "claim_tag"),
        ),
        (
            _pos("content"),
            (("--tag",), {"dest": "tags", "action": "append"}),
            (("--kind",), {}),
            (("--volatility",), {}),
            (("--status",), {}),
            (("--importance",), {"type": float}),
            (("--source",), {}),
            (("--claim-tag",), {}),
        ),
        write=True,
    ),
    CallCommand(
        "recall",
        "ranked retrieval",
        lambda w, a: w.recall(a.query, **_opts(a, "top_k", "tag", "kind", "hops", "full", "as_of")),
        (
            _pos("query"),
            (("--top-k",), {"type": int}),
            (("--tag",), {}),
            (("--kind",), {}),
            (("--hops",), {"type": int}),
            (("--full",), {"action": "store_true", "default": None}),
            _AS_OF,
        ),
    ),
    CallCommand(
        "get",
        "one entry",
        lambda w, a: w.get_entry(a.id, **_opts(a, "as_of")),
        (_pos("id"), _AS_OF),
    ),
    CallCommand(
        "append",
        "append text to an entry",
        lambda w, a: w.append(a.id, a.addition, **_key(a)),
        (_pos("id"), _pos("addition")),
        write=True,
    ),
    CallCommand(
        "update",
        "replace an entry's content",
        lambda w, a: w.update(a.id, a.content, **_key(a)),
        (_pos("id"), _pos("content")),
        write=True,
    ),
    CallCommand(
        "status",
        "set canonical|draft|deprecated",
        lambda w, a: w.set_status(a.id, a.status, **_key(a)),
        (_pos("id"), _pos("status")),
        write=True,
    ),
    CallCommand(
        "forget",
        "delete an entry permanently",
        lambda w, a: w.forget(a.id, **_key(a)),
        (_pos("id"),),
        write=True,
    ),
    CallCommand(
        "link",
        "add or update an edge",
        lambda w, a: w.link(a.src, a.dst, a.type, **_key(a), **_opts(a, "weight", "provenance")),
        (
            _pos("src"),
            _pos("dst"),
            _pos("type"),
            (("--weight",), {"type": float}),
            (("--provenance",), {}),
        ),
        write=True,
    ),
    CallCommand(
        "unlink",
        "remove an edge",
        lambda w, a: w.unlink(a.src, a.dst, a.type, **_key(a)),
        (_pos("src"), _pos("dst"), _pos("type")),
        write=True,
    ),
    CallCommand(
        "recent",
        "latest entries",
        lambda w, a: w.list_recent(**_opts(a, "n", "tag", "as_of")),
        ((("-n",), {"type": int}), (("--tag",), {}), _AS_OF),
    ),
    CallCommand(
        "connections", "edges of an entry", lambda w, a: w.connections(a.id), (_pos("id"),)
    ),
    CallCommand("count", "number of entries", lambda w, a: {"count": w.get_count()}),
    CallCommand(
        "tags",
        "the most used tags and their counts",
        lambda w, a: w.get_tags(**_opts(a, "limit")),
        ((("--limit",), {"type": int}),),
    ),
    CallCommand("stats", "workspace statistics", lambda w, a: w.get_stats()),
    CallCommand("brief", "session brief", lambda w, a: w.get_brief()),
    CallCommand(
        "call",
        "any method with a JSON body (--idempotency-key for a write)",
        lambda w, a: w._run(a.method, _json_argument(a.body, "the body"), key=a.idempotency_key),
        (_pos("method"), (("body",), {"nargs": "?", "default": "{}"})),
        write=True,
    ),
)


def _add_call_command(subparsers: Subparsers, command: CallCommand) -> None:
    parser = subparsers.add_parser(command.name, help=command.help)
    for flags, kwargs in command.arguments:
        parser.add_argument(*flags, **kwargs)
    if command.write:
        parser.add_argument("--idempotency-key", help=IDEMPOTENCY_KEY_HELP)
    connection_flags(parser, workspace=True)
    parser.set_defaults(func=_run(lambda c, a: command.action(_ws(c, a), a)))


def _register_calls(subparsers: Subparsers) -> None:
    for command in CALL_COMMANDS:
        _add_call_command(subparsers, command)


def register(subparsers: Subparsers) -> None:
    serve = subparsers.add_parser(
        "serve",
        help="start the service on the embedded default "
        "(local Ray, 127.0.0.1:8000, data in ./data)",
    )
    serve.add_argument(
        "--app-dir",
        help="folder holding serve_app.py and actors/ (default: "
        "$MINISPHERE_APP_DIR, the checkout, or .)",
    )
    serve.set_defaults(func=_serve)
    settings = subparsers.add_parser(
        "settings", help="print the table of environment variables the service reads (markdown)"
    )
    settings.add_argument(
        "--client", action="store_true", help="the client's and CLI's variables instead"
    )
    settings.set_defaults(func=_settings)
    _register_ws(subparsers)
    _register_tokens(subparsers)
    runs = subparsers.add_parser("runs", help="audited staleness runs, newest first (admin)")
    runs.add_argument("-w", "--workspace", default=None, help="only this workspace's runs")
    runs.add_argument("--limit", type=int, default=100)
    connection_flags(runs, workspace=False)
    runs.set_defaults(func=_run(lambda c, a: c.maintenance_runs(a.workspace, a.limit)))
    _register_calls(subparsers)
