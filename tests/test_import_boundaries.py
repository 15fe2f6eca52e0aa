"""What a fresh interpreter loads when one layer is imported: the runtime side of the layer rules
in pyproject.toml. lint-imports reads import statements only; these also catch what it cannot
see (a package-level `__getattr__`, `importlib.import_module("ray")`, an import inside a
function the layer runs)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SERVER_LIBRARIES = (
    "ray",
    "fastapi",
    "starlette",
    "uvicorn",
    "apscheduler",
    "sqlite_vec",
    "numpy",
    "boto3",
    "botocore",
    "pysqlite3",
)
SERVICE_LIBRARIES = (
    "ray",
    "fastapi",
    "starlette",
    "httpx",
    "boto3",
    "botocore",
    "apscheduler",
    "uvicorn",
)

LOADED = """
import json, sys
print(json.dumps(sorted(sys.modules)))
"""

USE_THE_CLIENT = """
import importlib, pkgutil
import minisphere.client
for module in pkgutil.walk_packages(minisphere.client.__path__, "minisphere.client."):
    importlib.import_module(module.name)
from minisphere.client import AsyncClient, Client
Client("http://127.0.0.1:9", admin_token="unused").workspace("notes", "unused")
AsyncClient("http://127.0.0.1:9", admin_token="unused").workspace("notes", "unused")
"""

USE_THE_ENGINE = """
import importlib, os, pkgutil, tempfile
import minisphere.engine
for module in pkgutil.walk_packages(minisphere.engine.__path__, "minisphere.engine."):
    importlib.import_module(module.name)
from minisphere.engine.workspace import Workspace
with tempfile.TemporaryDirectory() as folder:
    with Workspace(os.path.join(folder, "notes.db")) as ws:
        first = ws.capture("We chose SQLite per workspace", tags=["design"])["id"]
        second = ws.capture("WAL lets readers run beside one writer")["id"]
        ws.link(first, second, "relates_to")
        ws.recall("why sqlite?", topK=5)
        ws.call("runStalenessPass", {})
        ws.get_stats()
"""


def loaded_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code) + LOADED],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def of_packages(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in packages)


def test_the_client_loads_no_engine_module():
    loaded = loaded_after(USE_THE_CLIENT)
    assert sorted(m for m in loaded if m.startswith("minisphere.engine")) == []


def test_the_client_loads_no_other_server_layer():
    loaded = loaded_after(USE_THE_CLIENT)
    server = [
        m
        for m in loaded
        if m.startswith("minisphere.")
        and not m.startswith(("minisphere.client", "minisphere.errors", "minisphere.wire"))
    ]
    assert sorted(server) == []


def test_the_client_loads_no_server_library():
    assert of_packages(loaded_after(USE_THE_CLIENT), SERVER_LIBRARIES) == []


def test_the_engine_loads_no_service_library():
    assert of_packages(loaded_after(USE_THE_ENGINE), SERVICE_LIBRARIES) == []


def test_the_minisphere_package_reexports_nothing_and_loads_no_layer():
    loaded = loaded_after("""
        import minisphere
        assert not hasattr(minisphere, "Workspace")
        try:
            from minisphere import Workspace  # noqa: F401
        except ImportError:
            pass
        else:
            raise AssertionError("minisphere re-exports Workspace")
    """)
    assert sorted(m for m in loaded if m.startswith("minisphere.")) == []
