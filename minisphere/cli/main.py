"""`minisphere` command line. Each concern registers its own sub-commands:

- `minisphere.cli.service`   serve, settings, ws create|list|show|delete, runs, and the workspace
                             commands capture|recall|get|link|… (through the HTTP client)
- `minisphere.cli.contracts` contracts verify|pin|push-evidence|verify-evidence
- `minisphere.cli.data`      export, import (through the service, or offline on a file)
- `minisphere.cli.tools`     tools (the contract methods as LLM tool definitions)
- `minisphere.cli.mcp`       mcp (one workspace's MCP server on stdio)
"""

from __future__ import annotations

import argparse
import sys

from minisphere.cli import contracts, data, mcp, service, tools


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="minisphere", description="Mini-Sphere: per-workspace memory for AI agents"
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module in (service, contracts, data, tools, mcp):
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
