"""Helpers of the durability tests: filling a workspace, hashing files."""

from __future__ import annotations

import hashlib
from pathlib import Path

from minisphere.engine.workspace import Workspace
from tests.support.tcp_relay import TcpRelay, free_port  # noqa: F401 - re-exported


def fill(path: Path, contents: list[str]) -> list[str]:
    """Capture each content into the workspace at `path`; returns the ids."""
    with Workspace(path, synchronous="NORMAL") as ws:
        return [ws.capture(text)["id"] for text in contents]


def count(path: Path) -> int:
    with Workspace(path, synchronous="NORMAL") as ws:
        return ws.get_count()["count"]


def file_sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
