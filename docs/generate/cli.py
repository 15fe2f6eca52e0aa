"""reference/cli.md: the `minisphere` command's own `--help`, of every command and
sub-command, at a fixed width so the page does not depend on the terminal that made it."""

from __future__ import annotations

import argparse
import os

from docs.generate import notice

HELP_COLUMNS = "100"


def commands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    """(prog, parser) of the command and every sub-command, depth first, in their order."""
    found = [(parser.prog, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # aliases share one parser
                found += commands(sub)
    return found


def pages() -> dict[str, str]:
    from minisphere.cli.main import build_parser

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        sections = [(prog, sub.format_help()) for prog, sub in commands(build_parser())]
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    lines = [
        notice("`minisphere --help` of every command (minisphere/cli)"),
        "# Command line: `minisphere`",
        "",
        "The `minisphere` command is installed with the package. Workspace commands reach "
        "the service over HTTP (`--url`, else `MINISPHERE_URL`); the admin token comes "
        "from `--admin-token`, else `MINISPHERE_ADMIN_TOKEN`, else the `.admin_token` file "
        "`minisphere serve` keeps in its data folder. Export and import also work offline "
        "on a data folder or a file (`--data-dir`, `--path`). What follows is each "
        "command's `--help`.",
        "",
    ]
    for prog, text in sections:
        lines += [f"## `{prog}`", "", "```text", text.rstrip(), "```", ""]
    return {"reference/cli.md": "\n".join(lines).rstrip("\n") + "\n"}
