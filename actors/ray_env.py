"""The environment Ray's processes are born with, set by the launcher before Ray starts: a
setting read by Ray's own processes (its proxy, the replicas, the workers) must be in the
environment `ray.init` is called with, since every process it starts inherits it.

On a cluster the nodes' environment plays this part (infra/README.md sets the same names).
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Mapping, MutableMapping
from pathlib import Path

from minisphere.settings import DEFAULT_HTTP_FRONT

# Ray Serve's faster request path (its throughput-optimised mode); infra/serve_config.yaml and
# the RayService set the same.
SERVE_PERFORMANCE_ENV = {"RAY_SERVE_THROUGHPUT_OPTIMIZED": "1"}
# Pydantic's plugin scan reads every installed distribution's entry points the first time a
# process builds a validator, which would land in a woken workspace actor's first call; the
# service uses no plugin (an operator's own PYDANTIC_DISABLE_PLUGINS is kept).
WORKER_ENV = {"PYDANTIC_DISABLE_PLUGINS": "__all__"}
# An idle Ray worker's upkeep is mostly a 10 ms signal-check timer Ray hard-codes; of what can be
# set, only its per-event statistics (debug output alone) cost something: about 8% of an idle
# actor's CPU, and the raylet's and GCS's with it (bench/results/tuning-notes.md).
UPKEEP_ENV = {"RAY_event_stats": "0"}
# Serve gives a starting proxy 5 s to say it is ready, and kills it after three misses; on a
# loaded node HAProxy's manager takes longer than that, and `serve.start`, which waits on that
# very actor, then fails the whole start. A slow start is no broken proxy: it is given 30 s.
PROXY_READY_ENV = {"RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S": "30"}
HAPROXY_FLAG = "RAY_SERVE_ENABLE_HA_PROXY"
# Ray's HAProxy configuration sends no X-Forwarded-For, so every request would reach the replica
# from HAProxy's address and the failed-authentication budget (kept per client address) would be
# one for all callers. Ray renders its retry-on setting verbatim on a line of the `defaults`
# section: a second line there turns HAProxy's own `option forwardfor` on for every backend.
# tests/e2e/test_tokens.py holds it to that (a client's budget spent through HAProxy, not others').
HAPROXY_RETRY_ON = "RAY_SERVE_HAPROXY_RETRY_ON"
HAPROXY_RETRY_ON_WITH_CLIENT_ADDRESS = "conn-failure\n    option forwardfor"
HAPROXY_CONFIG_FILE = "RAY_SERVE_HAPROXY_CONFIG_FILE_LOC"
# Ray puts each node's files in a folder named by its 56-character node id under the configured
# one, and HAProxy refuses a socket path over 97 bytes: the folder must stay short
HAPROXY_RUNTIME_PARENT = "/tmp"
HAPROXY_RUNTIME_PREFIX = "ms-haproxy-"
HAPROXY_PORTS = (
    "RAY_SERVE_HAPROXY_STATS_PORT",
    "RAY_SERVE_HAPROXY_METRICS_PORT",
    "RAY_SERVE_FALLBACK_PROXY_HTTP_PORT",  # the head's Python proxy HAProxy falls back to
    "RAY_SERVE_FALLBACK_PROXY_GRPC_PORT",
)
HAPROXY_PATHS = (
    "RAY_SERVE_HAPROXY_SOCKET_PATH",
    "RAY_SERVE_HAPROXY_SERVER_STATE_BASE",
    "RAY_SERVE_HAPROXY_SERVER_STATE_FILE",
    "RAY_SERVE_HAPROXY_METRICS_SOCKET_PATH",
)


def free_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def haproxy_env() -> dict[str, str]:
    """Serve's HAProxy ingress naming each client, with what Ray would otherwise fix per host
    made this service's own: its stats and metrics listeners and the fallback proxy on free
    ports (Ray's defaults, 8404, 9101 and 8500, would collide with a second service on the
    host), and its config, admin socket and server state in a new short folder (Ray's default
    is one shared /tmp folder)."""
    runtime = Path(tempfile.mkdtemp(prefix=HAPROXY_RUNTIME_PREFIX, dir=HAPROXY_RUNTIME_PARENT))
    socket_path, state_base, state_file, metrics_socket = HAPROXY_PATHS
    return {
        HAPROXY_FLAG: "1",
        HAPROXY_RETRY_ON: HAPROXY_RETRY_ON_WITH_CLIENT_ADDRESS,
        **{name: str(free_loopback_port()) for name in HAPROXY_PORTS},
        HAPROXY_CONFIG_FILE: str(runtime / "haproxy.cfg"),
        socket_path: str(runtime / "admin.sock"),
        state_base: str(runtime),
        state_file: str(runtime / "server-state"),
        metrics_socket: str(runtime / "metrics.sock"),
    }


def prepare_ray_env(
    performance: bool = True,
    environ: MutableMapping[str, str] = os.environ,
    front: str = DEFAULT_HTTP_FRONT,
) -> None:
    """Before Ray starts, what every process it starts must inherit: `WORKER_ENV`,
    `UPKEEP_ENV`, `PROXY_READY_ENV`, Serve's `SERVE_PERFORMANCE_ENV` unless `performance` is
    off, and the HTTP `front` (`haproxy` or `python`, the setting MINISPHERE_HTTP_FRONT). A
    value already set is kept, but for the front's own switch, which follows the setting, and
    HAProxy's folder and ports when another launcher made them (a service started from within
    one inherits its environment)."""
    chosen = {
        **WORKER_ENV,
        **UPKEEP_ENV,
        **PROXY_READY_ENV,
        **(SERVE_PERFORMANCE_ENV if performance else {}),
    }
    for name, value in chosen.items():
        environ.setdefault(name, value)
    environ[HAPROXY_FLAG] = "1" if front == "haproxy" else "0"
    if front == "haproxy" and (
        HAPROXY_CONFIG_FILE not in environ or launcher_made(environ[HAPROXY_CONFIG_FILE])
    ):
        environ.update(haproxy_env())


def running_front(environ: Mapping[str, str] = os.environ) -> str:
    """The front Ray was started with, whatever the settings say (on a cluster the nodes'
    environment decides): what a replica must believe about who its peer is."""
    return "haproxy" if environ.get(HAPROXY_FLAG) == "1" else "python"


def launcher_made(config_file: str) -> bool:
    return Path(config_file).parent.name.startswith(HAPROXY_RUNTIME_PREFIX)


def release_ray_env(environ: MutableMapping[str, str] = os.environ) -> None:
    """Once Ray has stopped: remove the HAProxy folder `prepare_ray_env` made (none other)."""
    config = environ.get(HAPROXY_CONFIG_FILE, "")
    if config and launcher_made(config):
        shutil.rmtree(Path(config).parent, ignore_errors=True)
        for name in (HAPROXY_CONFIG_FILE, HAPROXY_RETRY_ON, *HAPROXY_PORTS, *HAPROXY_PATHS):
            environ.pop(name, None)
