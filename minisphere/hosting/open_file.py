"""A workspace file while it is open: the engine over it, its pool of readers and its one
writer, named so the host's calls take each part by what it is."""

from __future__ import annotations

from dataclasses import dataclass

from minisphere.engine.workspace import Workspace
from minisphere.hosting.group_commit import GroupCommitWriter
from minisphere.hosting.read_pool import ReadPool


@dataclass(frozen=True, slots=True)
class OpenFile:
    workspace: Workspace
    reads: ReadPool
    writer: GroupCommitWriter
