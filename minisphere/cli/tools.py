"""`minisphere tools`: the contract's methods as tool definitions for an LLM API.

    minisphere tools --format openai|anthropic|json-schema [--method NAME ...] [--dir D]

Prints one JSON array (generated from the engine's argument models, described by the pinned
contract surface; see `minisphere.integrations.tool_specs`). A model's tool call is sent with
`WorkspaceClient.call_tool(name, arguments)`. Exit status 1 when the contracts cannot be read.
"""

from __future__ import annotations

import argparse
import json

from minisphere.cli.common import Subparsers, fail, with_contracts_dir
from minisphere.contract.pins import load_surface
from minisphere.errors import MiniSphereError
from minisphere.integrations.tool_specs import FORMATS, TOOL_ARGUMENTS, tool_definitions


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "tools",
        help="print the contract methods as LLM tool definitions",
        description="The workspace methods as function/tool definitions (JSON) for an LLM API.",
    )
    parser.add_argument("--format", dest="tool_format", choices=FORMATS, default="openai")
    parser.add_argument(
        "--method",
        dest="methods",
        action="append",
        choices=list(TOOL_ARGUMENTS),
        help="only this method (repeatable; default: every workspace method)",
    )
    with_contracts_dir(parser)
    parser.set_defaults(func=cmd_tools)


def cmd_tools(args: argparse.Namespace) -> int:
    try:
        surface = load_surface(args.contracts_dir)
    except MiniSphereError as exc:
        return fail(str(exc))
    print(json.dumps(tool_definitions(args.tool_format, args.methods, surface), indent=2))
    return 0
