"""A woken workspace actor answers its first call without work that a warm one never does:
here, pydantic's search of every installed distribution for plugins (~9 ms), which would
otherwise run inside the first call (the argument models build on first use)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# In a fresh interpreter, as a spare is: import the actor module, then parse a method's
# arguments the way the first call does, with the distribution scan made to fail loudly.
FIRST_CALL = """
import importlib.metadata
import actors.workspace_actor
from minisphere.engine.methods import find_method, parse_args

def scanned(*_a, **_k):
    raise AssertionError("pydantic scanned the installed distributions for plugins")
importlib.metadata.distributions = scanned
parse_args(find_method("getCount"), {})
parse_args(find_method("recall"), {"query": "alpha"})
print("ok")
"""


def _first_call(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", FIRST_CALL], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=300)


def test_first_call_in_a_new_worker_does_not_scan_installed_distributions():
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    done = _first_call(env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


def test_an_operators_own_plugin_choice_is_kept():
    # PYDANTIC_DISABLE_PLUGINS set to a plugin name: the others still load, so the scan runs
    env = {**os.environ, "PYDANTIC_DISABLE_PLUGINS": "some-other-plugin"}
    done = _first_call(env)
    assert done.returncode != 0
    assert "scanned the installed distributions" in done.stderr
