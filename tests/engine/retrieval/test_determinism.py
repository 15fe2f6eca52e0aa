"""Recall ranks equal scores the same way in every process: string hashing differs per process
(PYTHONHASHSEED), and an order that followed a set's iteration made ties, and so the top k, vary
from one run of the same query over the same file to the next."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from minisphere.engine.clock import ManualClock
from minisphere.engine.workspace import Workspace

ROOT = Path(__file__).resolve().parents[3]
QUERIES = ["release checklist", "deploy the release", "checklist owner"]
CODE_NAMES = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
]
RECALL_IN_A_NEW_PROCESS = """
import json, sys
from minisphere.engine.clock import ManualClock
from minisphere.engine.workspace import Workspace
ws = Workspace(sys.argv[1], clock=ManualClock(), synchronous="NORMAL")
ranked = []
for q in json.loads(sys.argv[2]):
    ws.conn.execute("UPDATE entries SET recall_count = 0")   # every process asks of one state
    ranked.append([item["id"] for item in ws.recall(q, top_k=5)["items"]])
print(json.dumps(ranked))
ws.close()
"""


def test_ties_rank_the_same_whatever_the_process_hash_seed(tmp_path):
    path = tmp_path / "ties.db"
    with Workspace(path, clock=ManualClock(), synchronous="NORMAL") as ws:
        for name in CODE_NAMES:  # the same words but one, as long: equal BM25, all ties
            ws.capture(f"the release checklist {name}: deploy the release after the owner signs")
        ws.capture("the owner of the checklist signs the release")
    rankings = set()
    for seed in ("1", "2", "3", "4"):
        done = subprocess.run(
            [sys.executable, "-c", RECALL_IN_A_NEW_PROCESS, str(path), json.dumps(QUERIES)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert done.returncode == 0, done.stderr
        rankings.add(done.stdout.strip())
    assert len(rankings) == 1, rankings
