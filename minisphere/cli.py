"""`minisphere` command line. Each concern registers its own sub-commands:

- `minisphere.cli_service`   serve, ws create|list|delete, capture|recall|get|link|… (HTTP client)
- `minisphere.cli_contracts` contracts pin|verify|push-evidence

A module that is not present yet is simply skipped, so the CLI grows with the project.
"""
from __future__ import annotations

import argparse
import importlib
import sys

COMMAND_MODULES = ("minisphere.cli_service", "minisphere.cli_contracts", "minisphere.cli_data")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="minisphere",
                                     description="Mini-Sphere: per-workspace memory for AI agents")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
