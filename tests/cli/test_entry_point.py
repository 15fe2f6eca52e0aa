"""`python -m minisphere.cli` as a separate process: the entry point's exit codes and streams,
and one call to the running service over real HTTP from outside this process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.contracts import ACTIVE_VERSION
from tests.support.engine_gateway import ADMIN_TOKEN

ROOT = Path(__file__).resolve().parents[2]
PROCESS_TIMEOUT_S = 120


def minisphere(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "minisphere.cli", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
        env={**os.environ, **(env or {})},
    )


def test_contracts_verify_exits_0_and_names_the_contract():
    ran = minisphere("contracts", "verify")
    assert ran.returncode == 0, ran.stderr
    assert f"agree with MINI_SPHERE_CONTRACT@{ACTIVE_VERSION}" in ran.stdout


def test_no_command_is_a_usage_error_exit_2():
    ran = minisphere()
    assert ran.returncode == 2 and ran.stdout == ""
    assert ran.stderr.startswith("usage: minisphere") and "required" in ran.stderr


def test_unknown_command_is_a_usage_error_exit_2():
    ran = minisphere("frobnicate")
    assert ran.returncode == 2 and "invalid choice: 'frobnicate'" in ran.stderr


def test_a_workspace_command_reaches_the_running_service(service, cli):
    token = cli("ws", "create", "outside").json()["token"]
    assert cli("capture", "written in process", "-w", "outside").code == 0
    env = {
        "MINISPHERE_URL": service.url,
        "MINISPHERE_WORKSPACE": "outside",
        "MINISPHERE_TOKEN": token,
        "MINISPHERE_ADMIN_TOKEN": ADMIN_TOKEN,
    }
    counted = minisphere("count", env=env)
    assert counted.returncode == 0, counted.stderr
    assert json.loads(counted.stdout) == {"count": 1}
    refused = minisphere("count", "--token", "msw_nobody", env=env)
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr == "error: 401 unauthenticated: invalid token\n"
