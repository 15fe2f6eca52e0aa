"""Fixtures of the contract tests.

`s3_endpoint` / `fresh_bucket` come from tests/s3_fixtures.py. This folder has no __init__.py,
so tests/ is not guaranteed to be importable here: put it on sys.path explicitly (works in every
pytest import mode). Registering the same fixtures again from tests/conftest.py is harmless: the
moto server is a per-process singleton.
"""
import shutil
import sys
from pathlib import Path

import pytest

_TESTS_DIR = str(Path(__file__).resolve().parents[1])
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

from s3_fixtures import fresh_bucket, s3_endpoint  # noqa: E402,F401

REPO_CONTRACTS = Path(__file__).resolve().parents[2] / "contracts"


@pytest.fixture
def contracts_copy(tmp_path, monkeypatch):
    """A private copy of the repository's contracts/, selected through MINISPHERE_CONTRACTS_DIR."""
    target = tmp_path / "contracts"
    shutil.copytree(REPO_CONTRACTS, target)
    monkeypatch.setenv("MINISPHERE_CONTRACTS_DIR", str(target))
    return target
