"""The built site, once per session: `mkdocs build --strict` into a temporary folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from docs.generate import ROOT


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("material", reason="mkdocs-material (the test extra) builds the site")
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={
            **os.environ,
            "NO_MKDOCS_2_WARNING": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        },
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return out
