"""The randomized fault soak's short form (fault_soak.py): a few minutes of mixed writes and
reads on the operator's three-node cluster while faults are injected at random, then the
checker's verdict against the model of every acknowledged answer.

The long form is the same command with a longer `--duration-s`; its last figures are in
bench/results/fault-soak.md. Needs root and network namespaces, so elsewhere it is skipped.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_operator_deploy import needs_namespaces

SOAK = Path(__file__).with_name("fault_soak.py")
SHORT_SOAK_S = 100
SOAK_SEED = 20261205
SOAK_TIMEOUT_S = 900


@needs_namespaces
@pytest.mark.timeout(SOAK_TIMEOUT_S + 60)
def test_faults_at_random_lose_no_acknowledged_write_and_leak_no_forgotten_text():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RAY_ADDRESS", "MINISPHERE_", "AWS_"))}
    done = subprocess.run([sys.executable, str(SOAK), "--seed", str(SOAK_SEED),
                           "--duration-s", str(SHORT_SOAK_S), "--json"], env=env,
                          cwd=SOAK.parents[2], capture_output=True, text=True,
                          timeout=SOAK_TIMEOUT_S)
    print(done.stderr[-8000:])          # the soak's log and summary, shown on failure
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no findings; stderr tail:\n{done.stderr[-3000:]}"
    findings = json.loads(lines[-1])
    assert not (findings.get("cleanup") or {}).get("namespacesLeft"), findings["cleanup"]
    assert findings.get("violations") == [], json.dumps(findings["violations"])[:3000]
    assert findings.get("ok"), findings.get("error")
    assert sum(findings["faults"].values()) >= 5, findings["faults"]
    assert findings["operations"].get("capture", 0) > 0, findings["operations"]
    assert findings["entriesChecked"] > 0 and findings["liveTextsSeenByTheScan"] > 0
    assert done.returncode == 0
