"""A woken workspace actor answers its first call without work that a warm one never does:
here, pydantic's search of every installed distribution for plugins (~9 ms), which would
otherwise run inside the first call (the argument models build on first use). The launcher
turns it off in the environment Ray's processes are born with (ray_env.WORKER_ENV); importing
the actors changes no environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from actors import ray_env

ROOT = Path(__file__).resolve().parents[3]

# In a fresh interpreter, as a spare is: import the actor module, then parse a method's
# arguments the way the first call does, with the distribution scan made to fail loudly.
FIRST_CALL = """
import importlib.metadata
import actors.workspace.actor
from minisphere.engine.methods import find_method, parse_args

def scanned(*_a, **_k):
    raise AssertionError("pydantic scanned the installed distributions for plugins")
importlib.metadata.distributions = scanned
parse_args(find_method("getCount"), {})
parse_args(find_method("recall"), {"query": "alpha"})
print("ok")
"""

# Every actor module imported after Ray: the environment a worker was born with is untouched.
IMPORTS = """
import os, ray
before = dict(os.environ)
import actors.workspace.actor, actors.directory.actor, actors.scheduler.actor
import actors.embedder.actor, actors.ingress.gateway, actors.in_cluster
changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))
print(changed)
"""


def _run(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, text=True, capture_output=True, timeout=300
    )


def _without_the_setting() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}


def test_first_call_in_a_worker_the_launcher_starts_does_not_scan_installed_distributions():
    env = _without_the_setting()
    ray_env.prepare_ray_env(environ=env, front="python")
    done = _run(FIRST_CALL, env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


def test_an_operators_own_plugin_choice_is_kept():
    # PYDANTIC_DISABLE_PLUGINS set to a plugin name: the others still load, so the scan runs
    env = {**os.environ, "PYDANTIC_DISABLE_PLUGINS": "some-other-plugin"}
    ray_env.prepare_ray_env(environ=env, front="python")
    assert env["PYDANTIC_DISABLE_PLUGINS"] == "some-other-plugin"
    done = _run(FIRST_CALL, env)
    assert done.returncode != 0
    assert "scanned the installed distributions" in done.stderr


def test_importing_the_actors_changes_no_environment_variable():
    done = _run(IMPORTS, {**_without_the_setting(), "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
