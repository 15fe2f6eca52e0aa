"""Fixtures of the CLI tests: `cli(*argv)` runs `minisphere` in this process (its `main`) and
returns exit code, stdout and stderr; `service` is the real FastAPI app over real engine
workspaces (tests/support/engine_gateway.py) served by uvicorn on 127.0.0.1 in a thread, with
MINISPHERE_URL and MINISPHERE_ADMIN_TOKEN pointing at it -- no Ray."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from minisphere.cli.main import main
from tests.support.engine_gateway import ADMIN_TOKEN, EngineGateway, engine_api, serve


@dataclass
class Ran:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def cli(capsys):
    def run(*argv: str) -> Ran:
        capsys.readouterr()
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse: usage errors, --help
            code = exc.code
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return run


@dataclass
class Service:
    url: str
    gateway: EngineGateway


@pytest.fixture
def service(tmp_path, monkeypatch):
    for name in ("MINISPHERE_WORKSPACE", "MINISPHERE_TOKEN", "MINISPHERE_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    gateway = EngineGateway(tmp_path / "data")
    try:
        with serve(engine_api(gateway)) as url:
            monkeypatch.setenv("MINISPHERE_URL", url)
            monkeypatch.setenv("MINISPHERE_ADMIN_TOKEN", ADMIN_TOKEN)
            yield Service(url, gateway)
    finally:
        gateway.close()
