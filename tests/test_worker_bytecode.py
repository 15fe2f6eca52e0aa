"""Every workspace actor is a new Python process: the launcher leaves bytecode for what it
imports, so no worker compiles the modules from source (under PYTHONDONTWRITEBYTECODE, as on
these machines, no import would ever write it and every worker would compile again)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run in a fresh interpreter: for each module of the copy that the actor module imported, is
# there bytecode the import system will take (same source mtime and size in its header)?
REPORT = """
import importlib.util, json, os, sys
import actors.workspace.actor
root = os.getcwd()
stale = []
loaded = 0
for module in list(sys.modules.values()):
    source = getattr(module, "__file__", None) or ""
    if not source.startswith(root) or not source.endswith(".py"):
        continue
    loaded += 1
    cached = importlib.util.cache_from_source(source)
    try:
        header = open(cached, "rb").read(16)
    except OSError:
        stale.append(source)
        continue
    stat = os.stat(source)
    if (int.from_bytes(header[8:12], "little") != int(stat.st_mtime) & 0xFFFFFFFF
            or int.from_bytes(header[12:16], "little") != stat.st_size & 0xFFFFFFFF):
        stale.append(source)
print(json.dumps({"loaded": loaded, "stale": stale}))
"""


def _copy_of_the_app(target: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__")
    for package in ("minisphere", "actors"):
        shutil.copytree(ROOT / package, target / package, ignore=ignore)
    shutil.copy2(ROOT / "serve_app.py", target / "serve_app.py")


def _run(code: str, where: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(where), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=where,
        env=env,
        text=True,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_without_the_launchers_bytecode_a_worker_would_compile_every_module(tmp_path):
    _copy_of_the_app(tmp_path)
    report = json.loads(_run(REPORT, tmp_path).splitlines()[-1])
    assert report["loaded"] > 20  # the copy was imported, not the installed tree
    assert len(report["stale"]) == report["loaded"]


def test_the_launcher_leaves_bytecode_for_every_module_a_workspace_actor_imports(tmp_path):
    _copy_of_the_app(tmp_path)
    _run("import serve_app; assert serve_app.compile_worker_code()", tmp_path)
    report = json.loads(_run(REPORT, tmp_path).splitlines()[-1])
    assert report["loaded"] > 20
    assert report["stale"] == []
