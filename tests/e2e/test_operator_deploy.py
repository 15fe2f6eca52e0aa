"""The operator's procedure end to end: `ray start` nodes in their own network, PID and mount
namespaces (separate hosts with separate disks), `serve deploy infra/serve_config.yaml`, route
checks over HTTP, the drills (forget, delete, a delete racing a wake, a restore to a moment, a
full node or S3 down), kill -9 of a worker holding workspaces, and (the checked-in config's
run) `serve deploy` of a changed config.

The scenario (operator_scenario.py) runs as its own process and cleans up after itself; it needs
root and network namespaces, so elsewhere these tests are skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCENARIO = Path(__file__).with_name("operator_scenario.py")
SCENARIO_TIMEOUT_S = 600

needs_namespaces = pytest.mark.skipif(
    os.geteuid() != 0 or not all(shutil.which(t) for t in ("ip", "unshare", "nsenter", "serve")),
    reason="needs root, ip, unshare, nsenter and Ray Serve's CLI",
)


def findings_of(script: Path, *args: str, timeout_s: float) -> dict:
    """Run a namespace scenario as its own process (from the project folder: Ray's workers
    import `actors` from there) with no Ray, Mini-Sphere or AWS setting of ours leaking in;
    its findings (the JSON of its last line). Its log is printed, shown on failure."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RAY_ADDRESS", "MINISPHERE_", "AWS_"))
    }
    done = subprocess.run(
        [sys.executable, str(script), *args, "--json"],
        env=env,
        cwd=script.parents[2],
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    print(done.stderr[-8000:])
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no findings; stderr tail:\n{done.stderr[-3000:]}"
    findings = json.loads(lines[-1])
    assert not (findings.get("cleanup") or {}).get("namespacesLeft"), findings["cleanup"]
    findings["returncode"] = done.returncode
    return findings


def run_scenario(store: str) -> dict:
    findings = findings_of(SCENARIO, "--store", store, timeout_s=SCENARIO_TIMEOUT_S)
    failed = [name for name, ok in findings.get("checks", {}).items() if not ok]
    assert findings.get("ok"), (
        f"failed checks: {failed}; error: {findings.get('error')}; "
        f"details: {json.dumps(findings.get('details', {}))[:3000]}"
    )
    assert findings["returncode"] == 0
    return findings


@needs_namespaces
@pytest.mark.timeout(SCENARIO_TIMEOUT_S + 60)
def test_a_stopped_worker_loses_workspaces_or_a_redeploy_loses_writes_s3_snapshots():
    """The checked-in config as it is; snapshots on an S3-protocol server every node reaches."""
    findings = run_scenario("s3")
    assert findings["config"] == "infra/serve_config.yaml"
    assert findings["moved"], "the stopped worker held no workspace: nothing was shown"


@needs_namespaces
@pytest.mark.timeout(SCENARIO_TIMEOUT_S + 60)
def test_a_stopped_worker_or_a_full_node_loses_workspaces_local_snapshots():
    """Snapshots in one folder every node mounts (NFS-like), standing in for S3; async
    replication (a kill loses only writes answered within its window) and no spares (the
    full-node drill's wakes really move)."""
    findings = run_scenario("local")
    assert findings["moved"], "the stopped worker held no workspace: nothing was shown"
