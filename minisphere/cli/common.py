"""What every `minisphere` sub-command shares: where the service is, the admin token, errors."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TypeAlias

from minisphere.settings import ADMIN_TOKEN_FILE, DEFAULT_DATA_DIR, env_value

# what `add_subparsers` returns, each module registering its commands on it
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
DEFAULT_URL = "http://127.0.0.1:8000"
NO_TOKEN = (
    "no token to send: give --admin-token (or a workspace's --token), or set "
    "MINISPHERE_ADMIN_TOKEN; `minisphere serve` keeps it in <data>/.admin_token"
)


def admin_token(args: argparse.Namespace) -> str:
    """`--admin-token`, else MINISPHERE_ADMIN_TOKEN (the flag's default), else the token file the
    embedded default keeps in its data folder, when readable."""
    if getattr(args, "admin_token", ""):
        token: str = args.admin_token
        return token
    token_file = Path(env_value("MINISPHERE_DATA_DIR") or DEFAULT_DATA_DIR) / ADMIN_TOKEN_FILE
    return token_file.read_text(encoding="utf-8").strip() if token_file.is_file() else ""


def connection_flags(parser: argparse.ArgumentParser, workspace: bool) -> None:
    parser.add_argument("--url", default=env_value("MINISPHERE_URL") or DEFAULT_URL)
    parser.add_argument("--admin-token", default=env_value("MINISPHERE_ADMIN_TOKEN"))
    if workspace:
        parser.add_argument("-w", "--workspace", default=env_value("MINISPHERE_WORKSPACE") or None)
        parser.add_argument(
            "--token",
            default=env_value("MINISPHERE_TOKEN"),
            help="workspace token (default: the admin token)",
        )


def with_contracts_dir(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The `--dir` flag of the commands that read the pinned contract files."""
    parser.add_argument(
        "--dir",
        dest="contracts_dir",
        default=None,
        help="contracts directory (default: $MINISPHERE_CONTRACTS_DIR, else the "
        "repository's contracts/)",
    )
    return parser


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 1
