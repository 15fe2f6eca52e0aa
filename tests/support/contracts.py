"""The `contracts_copy` fixture: a private copy of the repository's contracts/, for tests that
change contract files or pins (the contract tests and the CLI's `contracts` commands)."""

import shutil
from pathlib import Path

import pytest

from minisphere.contract.pins import CONTRACT_NAME, active_version

REPO_CONTRACTS = Path(__file__).resolve().parents[2] / "contracts"
ACTIVE_VERSION = active_version(REPO_CONTRACTS)  # the highest version present
TEXT = f"{CONTRACT_NAME}@{ACTIVE_VERSION}.md"
SURFACE = f"{CONTRACT_NAME}@{ACTIVE_VERSION}.surface.json"
# every contract file of the repository, of every version (each stays pinned and verified)
CONTRACT_FILES = {p.name for p in REPO_CONTRACTS.iterdir() if p.suffix in (".md", ".json")}
# the version an amendment in a test makes: the active one's last part plus one
NEXT_VERSION = ".".join(
    [*ACTIVE_VERSION.split(".")[:-1], str(int(ACTIVE_VERSION.split(".")[-1]) + 1)]
)


@pytest.fixture
def contracts_copy(tmp_path, monkeypatch):
    """A private copy of the repository's contracts/, selected through MINISPHERE_CONTRACTS_DIR."""
    target = tmp_path / "contracts"
    shutil.copytree(REPO_CONTRACTS, target)
    monkeypatch.setenv("MINISPHERE_CONTRACTS_DIR", str(target))
    return target
