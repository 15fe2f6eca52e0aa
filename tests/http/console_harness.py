"""A development harness for the web console, without Ray: the real FastAPI app in front of
the engine-backed gateway of `tests/support/engine_gateway.py`, with one seeded workspace.

    python -m tests.http.console_harness [--port 8765] [--entries 1000]

prints the console's address and three tokens (admin, write, read) and serves until Ctrl-C.
It is for looking at the console and poking its JavaScript; the tests use the same gateway
(tests/client, tests/cli) or the real service (tests/e2e/test_console.py).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from tests.e2e.console_helpers import build_seed_file
from tests.support.engine_gateway import ADMIN_TOKEN, EngineGateway, engine_api

WORKSPACE = "demo"


def seeded_gateway(folder: Path, entries: int) -> tuple[EngineGateway, str, str]:
    """The gateway with workspace `demo` seeded with about `entries` entries; (gateway, write
    token, read token)."""
    gateway = EngineGateway(folder)
    write = gateway.create_now(WORKSPACE, label="console harness")["token"]
    build_seed_file(gateway.path(WORKSPACE), entries)
    read = gateway.control.tokens.issue(WORKSPACE, "read", "harness read")["token"]
    return gateway, write, read


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--entries", type=int, default=1000)
    args = parser.parse_args(argv)
    import uvicorn

    gateway, write, read = seeded_gateway(
        Path(tempfile.mkdtemp(prefix="console-harness-")), args.entries
    )
    print(
        f"console: http://127.0.0.1:{args.port}/ui/\nadmin token: {ADMIN_TOKEN}\n"
        f"write token: {write}\nread token:  {read}\nworkspace: {WORKSPACE}",
        flush=True,
    )
    uvicorn.run(engine_api(gateway), host="127.0.0.1", port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
