"""The `contracts_copy` fixture: a private copy of the repository's contracts/, for tests that
change contract files or pins (the contract tests and the CLI's `contracts` commands)."""
import shutil
from pathlib import Path

import pytest

REPO_CONTRACTS = Path(__file__).resolve().parents[2] / "contracts"


@pytest.fixture
def contracts_copy(tmp_path, monkeypatch):
    """A private copy of the repository's contracts/, selected through MINISPHERE_CONTRACTS_DIR."""
    target = tmp_path / "contracts"
    shutil.copytree(REPO_CONTRACTS, target)
    monkeypatch.setenv("MINISPHERE_CONTRACTS_DIR", str(target))
    return target
