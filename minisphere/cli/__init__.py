"""The `minisphere` command (entry point `minisphere.cli:main`)."""

from minisphere.cli.main import main

__all__ = ["main"]
