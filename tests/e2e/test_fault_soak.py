"""The randomized fault soak's short form (fault_soak.py): a few minutes of mixed writes and
reads on the operator's three-node cluster while faults are injected at random, then the
checker's verdict against the model of every acknowledged answer.

The long form is the same command with a longer `--duration-s`; its last figures are in
bench/results/fault-soak.md. Needs root and network namespaces, so elsewhere it is skipped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_operator_deploy import findings_of, needs_namespaces

SOAK = Path(__file__).with_name("fault_soak.py")
SHORT_SOAK_S = 70  # a fault every 7-9 s: about nine of them
SOAK_SEED = 20261205
SOAK_TIMEOUT_S = 900
MIN_FAULTS = 5  # the run goes on past SHORT_SOAK_S until this many (a busy machine is slower)
# Every fault kind but the two that take a minute each (an actor stopped past the liveness
# bound, a node lost after a forget on the large workspace): in 70 s they would leave room for
# two or three faults. They run in the long form; the liveness bound also has its own test
# (tests/e2e/test_crash.py). The soak refuses a name it does not know.
CI_FAULTS = (
    "kill -9 workspace actor",
    "kill -9 directory",
    "kill -9 litestream",
    "SIGSTOP litestream",
    "SIGSTOP raylet",
    "S3 server restarted",
    "local copy corrupted",
    "kill -9 whole node",
    "kill -9 raylet",
    "one tenant holds the ingress",
)


@needs_namespaces
@pytest.mark.timeout(SOAK_TIMEOUT_S + 60)
def test_faults_at_random_lose_no_acknowledged_write_and_leak_no_forgotten_text():
    findings = findings_of(
        SOAK,
        "--seed",
        str(SOAK_SEED),
        "--duration-s",
        str(SHORT_SOAK_S),
        "--faults",
        ",".join(CI_FAULTS),
        "--min-faults",
        str(MIN_FAULTS),
        timeout_s=SOAK_TIMEOUT_S,
    )
    assert findings.get("violations") == [], json.dumps(findings["violations"])[:12000]
    assert findings.get("ok"), (findings.get("error"), findings.get("errorAt"))
    assert sum(findings["faults"].values()) >= MIN_FAULTS, findings["faults"]
    assert findings["operations"].get("capture", 0) > 0, findings["operations"]
    # the memory tool's files, beside ordinary captures tagged like them
    memory = {name: n for name, n in findings["operations"].items() if name.startswith("memory ")}
    assert sum(memory.values()) > 0, findings["operations"]
    assert findings["entriesChecked"] > 0 and findings["liveTextsSeenByTheScan"] > 0
    assert findings["returncode"] == 0
