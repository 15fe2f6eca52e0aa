"""Workspaces drive the cluster's size, with Ray's own autoscaler (its fake multi-node provider
launches real raylets on this machine): more wakes than one worker's workspace slots make it
add a worker, where those workspaces are placed; once they hibernate the idle worker is
removed; nothing acknowledged is lost.

The scenario (autoscale_scenario.py) runs in its own network, PID and mount namespaces and
removes them afterwards; it needs root, so elsewhere this test is skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCENARIO = Path(__file__).with_name("autoscale_scenario.py")
SCENARIO_TIMEOUT_S = 300


@pytest.mark.skipif(
    os.geteuid() != 0 or not all(shutil.which(t) for t in ("ip", "unshare")),
    reason="needs root, ip and unshare",
)
@pytest.mark.timeout(SCENARIO_TIMEOUT_S + 60)
def test_wakes_beyond_the_slots_get_no_node_or_an_idle_node_is_never_removed():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "MINISPHERE_"))}
    done = subprocess.run(
        [sys.executable, str(SCENARIO), "--json", "--timeout", str(SCENARIO_TIMEOUT_S - 20)],
        env=env,
        cwd=SCENARIO.parents[2],
        capture_output=True,
        text=True,
        timeout=SCENARIO_TIMEOUT_S,
    )
    print(done.stderr[-4000:])
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no findings; stderr tail:\n{done.stderr[-3000:]}"
    findings = json.loads(lines[-1])
    # what failed first (error, checks, timings, a stalled wake), the long logs after
    brief = {k: v for k, v in findings.items() if k not in ("actors", "autoscalerLog")}
    assert findings.get("ok"), (
        json.dumps(brief, indent=2)[:6000]
        + "\n"
        + json.dumps(findings.get("actors"))[:3000]
        + "\n"
        + str(findings.get("autoscalerLog", ""))[-2000:]
    )
    assert findings["timings"]["second worker alive"] is not None
    assert findings["writes"]["kept"] == findings["writes"]["acknowledged"] > 0
