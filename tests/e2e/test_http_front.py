"""The service's HTTP front is Serve's HAProxy ingress by default (a third of the Python proxy's
CPU per call), and HAProxy names each client to the replica: the failed-auth budget stays per
client address (tests/e2e/test_tokens.py spends one client's budget through it)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

from actors import ray_env

TCP_LISTEN = "0A"


def listener_names(port: int) -> set[str]:
    """The process names holding a listening TCP socket on `port` (read from /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == TCP_LISTEN:
                inodes.add(f"socket:[{fields[9]}]")
    names = set()
    for process in Path("/proc").iterdir():
        if not process.name.isdigit():
            continue
        try:
            held = {str(fd.readlink()) for fd in (process / "fd").iterdir()}
            if held & inodes:
                names.add((process / "comm").read_text().strip())
        except OSError:  # ended meanwhile, or not ours to read
            continue
    return names


def test_the_service_port_is_haproxys_and_haproxy_names_each_client(service):
    assert service["config"].http_front == "haproxy"
    holders = listener_names(urlparse(service["url"]).port)
    assert "haproxy" in holders and "ray::ProxyActor" not in holders, holders
    folder = Path(os.environ[ray_env.HAPROXY_CONFIG_FILE]).parent
    # one per node, under the node's id (the session's cluster may have had worker nodes too)
    written = list(folder.glob("*/haproxy.cfg"))
    assert written
    for config in written:
        defaults = config.read_text().split("\ndefaults\n", 1)[1].split("\nfrontend ", 1)[0]
        assert "\n    option forwardfor\n" in defaults, config
