"""A head and two worker nodes on one machine; one worker node is removed; its workspaces
come back on another node from snapshots, nothing snapshotted is lost, the scheduler runs on.

The scenario (multinode_scenario.py) runs in its own process with its own Ray cluster and its
own RAY_TMPDIR, so it never touches the session cluster other tests use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

SCENARIO = Path(__file__).with_name("multinode_scenario.py")
SCENARIO_TIMEOUT_S = 900


@pytest.mark.timeout(SCENARIO_TIMEOUT_S + 60)
def test_multinode_worker_loss_restores_workspaces_from_snapshots():
    ray_tmp = tempfile.mkdtemp(prefix="msmn", dir="/tmp")  # short: Ray's socket paths
    data_dir = Path(tempfile.mkdtemp(prefix="msmn-data-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "MINISPHERE_"))}
    env["RAY_TMPDIR"] = ray_tmp
    try:
        # run from the project folder: Ray's workers import `actors` from the driver's directory
        done = subprocess.run(
            [sys.executable, str(SCENARIO), str(data_dir)],
            env=env,
            cwd=SCENARIO.parents[2],
            capture_output=True,
            text=True,
            timeout=SCENARIO_TIMEOUT_S,
        )
    finally:
        subprocess.run(["rm", "-rf", ray_tmp, str(data_dir)], check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no findings; stderr tail:\n{done.stderr[-3000:]}"
    findings = json.loads(lines[-1])
    assert findings.get("ok"), json.dumps(findings, indent=2) + "\n" + done.stderr[-2000:]
    assert done.returncode == 0
