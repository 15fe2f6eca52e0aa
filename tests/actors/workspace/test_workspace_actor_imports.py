"""What a workspace actor's process imports to start as a spare. Every spare is a whole process
start, and on this machine the start rate bounds how fast hibernated workspaces wake
(bench/results/spare-start.md): modules only some calls need (exports and imports, the
blueprint models with their cron parser, S3) are imported on first use, not by every spare.
Each check runs in a fresh interpreter, as a Ray worker does."""

from __future__ import annotations

import json
import subprocess
import sys

# imported on first use only: by the first export or import, by a launch carrying a vector
# binding, by a snapshot store on S3
LAZY_MODULES = (
    "apscheduler",
    "tzlocal",
    "minisphere.control.blueprints",
    "minisphere.transfer",
    "actors.workspace.transfer_steps",
    "boto3",
    "botocore",
)


def fresh_interpreter(code: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_spare_starts_without_importing_what_only_transfers_blueprints_or_s3_need():
    loaded = fresh_interpreter(
        "import json, sys, ray, actors.workspace.actor\nprint(json.dumps(sorted(sys.modules)))"
    )
    heavy = [
        name
        for name in LAZY_MODULES
        if name in loaded or any(m.startswith(name + ".") for m in loaded)
    ]
    assert heavy == [], f"a spare now imports {heavy} at start; import them where first used"


def test_a_launch_with_a_vector_binding_still_unpickles_in_a_fresh_spare():
    # the launch module names the binding's class only for type checkers: unpickling a launch
    # that carries one must import the class by itself
    from minisphere.control.blueprints import VectorBindingSpec
    from minisphere.directory.launch import WorkspaceLaunch

    launch = WorkspaceLaunch(
        "ws-1", "/tmp/ws-1.db", vector=VectorBindingSpec(provider="hash", dimensions=8)
    )
    import pickle

    answer = fresh_interpreter(
        "import json, pickle, sys\n"
        "import actors.workspace.actor\n"
        f"launch = pickle.loads({pickle.dumps(launch)!r})\n"
        "print(json.dumps({'spec': launch.vector.embedder_spec(),"
        " 'class': type(launch.vector).__module__}))"
    )
    assert answer == {
        "spec": {"provider": "hash", "model": "all-MiniLM-L6-v2", "dim": 8},
        "class": "minisphere.control.blueprints",
    }
